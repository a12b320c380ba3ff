"""Storage URIs: a path is a path (never a repository name), a bare org/name is the Hub."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk import HuggingFaceDatasetInitializer, HuggingFaceModelInitializer
from trainer_sdk.manifests.storage import local_path, machine_paths, trainjob_uri


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        pytest.param("./data.jsonl", "file://{cwd}/data.jsonl", id="dot-slash"),
        pytest.param("../up/m", "file://{parent}/up/m", id="parent"),
        pytest.param("/models/tiny", "file:///models/tiny", id="absolute"),
        pytest.param("file:///models/my%20model", "file:///models/my%20model", id="file-uri"),
        pytest.param("tatsu-lab/alpaca", "hf://tatsu-lab/alpaca", id="bare-org-name"),
        pytest.param("hf://gpt2", "hf://gpt2", id="hf"),
        pytest.param("s3://bucket/key", "s3://bucket/key", id="s3"),
    ],
)
def test_what_the_trainjob_carries(
    written: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert trainjob_uri(written) == expected.format(cwd=tmp_path, parent=tmp_path.parent)


def test_a_file_uri_with_a_host_is_refused() -> None:
    with pytest.raises(ValueError, match="expected file:///<absolute path>"):
        local_path("file://server/share/x")


def test_the_initializers_take_paths_and_still_refuse_what_is_neither() -> None:
    assert HuggingFaceDatasetInitializer("./tiny_alpaca.jsonl").storage_uri == "./tiny_alpaca.jsonl"
    assert HuggingFaceModelInitializer("~/models/tiny").storage_uri == "~/models/tiny"
    assert HuggingFaceModelInitializer("pvc://models/tiny").storage_uri == "pvc://models/tiny"
    with pytest.raises(ValueError, match=r"a path \('./dataset'.* or 'pvc://<claim>/<dataset>'"):
        HuggingFaceDatasetInitializer("tiny_alpaca.jsonl")
    with pytest.raises(ValueError, match="got pvc:///x"):
        HuggingFaceDatasetInitializer("pvc:///x")


def test_paths_on_this_machine_are_named_for_the_cluster_backend() -> None:
    manifest = {
        "spec": {
            "initializer": {
                "dataset": {"storageUri": "file:///data/x.jsonl"},
                "model": {"storageUri": "hf://org/m"},
            },
            "trainer": {
                "args": ["--method=distillation", "--teacher_storage_uri=file:///models/t"]
            },
        }
    }
    assert machine_paths(manifest) == [
        ("spec.initializer.dataset.storageUri", "file:///data/x.jsonl"),
        ("spec.trainer.args[1]", "file:///models/t"),
    ]
