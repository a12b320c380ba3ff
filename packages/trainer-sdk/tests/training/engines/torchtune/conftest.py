"""torchtune's environment (``tools/engine_env.py``), tiny models of each runtime's family
built in it, and a small instruct data set."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[6]
PYTHON_ENV = "TRAINER_SDK_TORCHTUNE_PYTHON"


@pytest.fixture(scope="session")
def torchtune_python() -> str:
    """The interpreter of torchtune's environment: ``$TRAINER_SDK_TORCHTUNE_PYTHON``, else
    ``.venv-torchtune`` at the repository root, made here when it is missing or stale (what
    ``hatch run torchtune-env`` does: about a minute from PyPI)."""
    if PYTHON_ENV in os.environ:
        return os.environ[PYTHON_ENV]
    import engine_env  # tools/, on pytest's path

    return str(engine_env.ensure("torchtune", REPO_ROOT / ".venv-torchtune", "tune"))


@pytest.fixture(scope="session")
def tiny_models(torchtune_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a tiny model of each family (``llama3_2/``, ``qwen2_5/``)."""
    directory = tmp_path_factory.mktemp("tiny-models")
    write = (
        "import sys; from pathlib import Path\n"
        "from trainer_sdk.training.engines.torchtune.tiny_model import FAMILIES, write_tiny_model\n"
        "for family in FAMILIES: write_tiny_model(Path(sys.argv[1]) / family, family)"
    )
    subprocess.run(
        [torchtune_python, "-c", write, str(directory)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return directory


@pytest.fixture(scope="session")
def instruct_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """64 records of a task a tiny model learns within a few steps: repeat the words asked for."""
    words = [
        "red",
        "green",
        "blue",
        "cat",
        "dog",
        "bird",
        "runs",
        "jumps",
        "sleeps",
        "big",
        "small",
    ]
    generator = random.Random(0)
    path = tmp_path_factory.mktemp("data") / "repeat.jsonl"
    with path.open("w") as stream:
        for _ in range(64):
            pair = " ".join(generator.sample(words, 2))
            record = {"question": f"Repeat twice: {pair}", "answer": f"{pair} {pair}"}
            stream.write(json.dumps(record) + "\n")
    return path
