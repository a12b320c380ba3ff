"""A tiny model and a chat data set built here (no hub), the Hub stand-in serving both, and a
local client that runs TRL jobs on them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from http.server import HTTPServer
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import (
    BuiltinTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalBackendConfig,
    TrainerClient,
    TrainJob,
    TRLConfig,
    constants,
)
from trainer_sdk.training.engines.tiny_model import write_tiny_model

from .hub_standin import HubStandIn

FAULTS = Path(__file__).with_name("faulty_rank.py")
COLORS = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}


def chat_records(copies: int = 16) -> list[dict[str, object]]:
    """Questions about colours and their one-word answers, as chat messages."""
    return [
        {
            "messages": [
                {"role": "user", "content": f"what is the color of the {thing}"},
                {"role": "assistant", "content": color},
            ]
        }
        for _ in range(copies)
        for thing, color in COLORS.items()
    ]


def heldout_texts(tokenizer: Any) -> list[str]:
    """Conversations never in training (a question asked another way, and its answer), in the
    tokenizer's chat template."""
    return [
        tokenizer.apply_chat_template(
            [
                {"role": "user", "content": f"tell me the color of the {thing}"},
                {"role": "assistant", "content": color},
            ],
            tokenize=False,
        )
        for thing, color in sorted(COLORS.items())
    ]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "llama")


@pytest.fixture(scope="session")
def tiny_qwen2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2", family="qwen2")


@pytest.fixture(scope="session")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another tiny model (other weights, the same tokenizer): a distillation's teacher."""
    return write_tiny_model(tmp_path_factory.mktemp("teacher") / "llama", seed=1)


@pytest.fixture(scope="session")
def chat_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "colors.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in chat_records()))
    return path


@pytest.fixture
def hub(
    serve: Callable[[HTTPServer], str],
    tiny_model: Path,
    tiny_qwen2: Path,
    chat_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """The stand-in serving the models ``tiny/llama`` and ``tiny/qwen2`` and the data set
    ``tiny/colors``; HF_ENDPOINT set (the local backend's pods inherit it)."""
    url = serve(
        HubStandIn(
            {
                ("model", "tiny/llama"): tiny_model,
                ("model", "tiny/qwen2"): tiny_qwen2,
                ("dataset", "tiny/colors"): chat_file.parent,
            }
        )
    )
    monkeypatch.setenv("HF_ENDPOINT", url)
    return url


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TrainerClient]:
    """A local client in the test's directory, its jobs stopped when it closes."""
    # One thread per rank: two ranks of a 2-core machine, as torchrun sets it for several ranks.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield client
    client.backend.close()


def faulty_runtime(name: str, fault: str | None) -> dict[str, Any]:
    """trl-cpu restarting its JobSet once, its ranks run by the fault wrapper (``faulty_rank.py``:
    ``--kill-at=N``, ``--hold-at=N``; None: no fault)."""
    from trainer_runtime import builtin_runtimes

    doc: dict[str, Any] = builtin_runtimes()["trl-cpu"].to_dict()
    doc["metadata"]["name"] = name
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    node = doc["spec"]["template"]["spec"]["replicatedJobs"][2]["template"]["spec"]["template"]
    container = node["spec"]["containers"][0]
    engine = container["command"].index("trainer_sdk.training.engines")
    wrapper = [str(FAULTS), *([fault] if fault else [])]
    container["command"] = ["torchrun", *wrapper, *container["command"][engine + 1 :]]
    return doc


def start_job(
    client: TrainerClient, config: TRLConfig, model: Path, dataset: Path, runtime: str = "trl-cpu"
) -> str:
    """``config`` on ``runtime`` with the model and data set at these paths: the job's name."""
    initializer = Initializer(
        model=HuggingFaceModelInitializer(str(model)),
        dataset=HuggingFaceDatasetInitializer(str(dataset)),
    )
    return client.train(runtime=runtime, initializer=initializer, trainer=BuiltinTrainer(config))


def completed(client: TrainerClient, name: str) -> TrainJob:
    """The job ``name`` once complete (else its logs' end in the failure)."""
    job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
    assert job.status == constants.TRAINJOB_COMPLETE, "\n".join(client.get_job_logs(name))[-3000:]
    return job


def run_to_completion(
    client: TrainerClient,
    config: TRLConfig,
    model: Path,
    dataset: Path,
    runtime: str = "trl-cpu",
) -> tuple[str, TrainJob]:
    """``config`` on ``runtime`` with the model and data set at these paths, to its end: its
    name and the completed job."""
    name = start_job(client, config, model, dataset, runtime)
    return name, completed(client, name)
