"""HuggingFace downloads against a local stand-in of the Hub's HTTP API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainer_sdk.initializers import download_huggingface

from .conftest import Fixture


def serve_repo(fixture: Fixture, kind: str, repo: str, files: dict[str, bytes]) -> None:
    siblings = {"siblings": [{"rfilename": name} for name in files]}
    fixture.routes[f"/api/{kind}s/{repo}/revision/main"] = json.dumps(siblings).encode()
    resolve = f"/datasets/{repo}" if kind == "dataset" else f"/{repo}"
    for name, body in files.items():
        fixture.routes[f"{resolve}/resolve/main/{name}"] = body


def test_dataset_files_are_downloaded_with_token_minus_ignored(
    http_fixture: Fixture, tmp_path: Path
) -> None:
    serve_repo(
        http_fixture,
        "dataset",
        "tatsu/alpaca",
        {"data/train.json": b"[1]", "README.md": b"# a", "weights.bin": b"x"},
    )
    files = download_huggingface(
        "hf://tatsu/alpaca", tmp_path, "dataset", http_fixture.url, "secret", ["*.bin"]
    )
    assert sorted(path.relative_to(tmp_path).as_posix() for path in files) == [
        "README.md",
        "data/train.json",
    ]
    assert (tmp_path / "data" / "train.json").read_bytes() == b"[1]"
    assert all(headers.get("Authorization") == "Bearer secret" for _, headers in http_fixture.seen)


def test_a_sub_path_selects_files_relative_to_it(http_fixture: Fixture, tmp_path: Path) -> None:
    serve_repo(http_fixture, "model", "org/tiny", {"onnx/model.onnx": b"m", "config.json": b"{}"})
    files = download_huggingface("hf://org/tiny/onnx", tmp_path, "model", http_fixture.url)
    assert [path.relative_to(tmp_path).as_posix() for path in files] == ["model.onnx"]


def test_an_unscoped_repository_is_downloaded(http_fixture: Fixture, tmp_path: Path) -> None:
    serve_repo(http_fixture, "model", "gpt2", {"config.json": b"{}"})
    files = download_huggingface("hf://gpt2", tmp_path, "model", http_fixture.url)
    assert [path.relative_to(tmp_path).as_posix() for path in files] == ["config.json"]
    assert http_fixture.seen[0][0] == "/api/models/gpt2/revision/main"


@pytest.mark.parametrize("uri", ["s3://b/k", "hf://", "hf:///"])
def test_bad_uris_name_storage_uri(uri: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="STORAGE_URI"):
        download_huggingface(uri, tmp_path, "dataset", "http://127.0.0.1:1")
