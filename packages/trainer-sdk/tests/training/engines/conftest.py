"""A tiny model and a chat data set built here (no hub), and the Hub stand-in serving both."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import HTTPServer
from pathlib import Path

import pytest
from trainer_sdk.training.engines.tiny_model import write_tiny_model

from .hub_standin import HubStandIn

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


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "llama")


@pytest.fixture(scope="session")
def tiny_qwen2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2", family="qwen2")


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
