"""The runtime store under hostile or damaged contents: one unreadable file hides only itself (and
is named), every name the API accepts can be stored, and a namespace is checked before it is
ever part of a path."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.backends.local.runtime_store import RUNTIMES_DIR, RuntimeStore
from trainer_sdk.backends.local.submit.planning import builtin_runtime_manifests
from trainer_sdk.cli import cli


def own_runtime(kind: str, name: str) -> dict[str, Any]:
    manifest = {**builtin_runtime_manifests()["torch-distributed"], "kind": kind}
    manifest["metadata"] = {"name": name}
    manifest.pop("status", None)
    return manifest


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(b"", id="empty-after-a-crash"),
        pytest.param(b'{"kind": "TrainingRun', id="torn"),
        pytest.param(b"\xff\xfe not utf-8", id="not-utf-8"),
        pytest.param(b"[1, 2]", id="not-a-manifest"),
        pytest.param(None, id="unreadable-directory"),
    ],
)
def test_one_damaged_runtime_file_hides_only_itself_and_is_named(
    tmp_path: Path, damage: bytes | None, caplog: pytest.LogCaptureFixture
) -> None:
    store = RuntimeStore(tmp_path)
    store.apply(own_runtime("TrainingRuntime", "good"))
    store.apply(own_runtime("TrainingRuntime", "bad"))
    bad = tmp_path / RUNTIMES_DIR / "TrainingRuntime" / "default" / "bad" / "runtime.json"
    if damage is None:  # a directory where the manifest should be
        bad.unlink()
        bad.mkdir()
    else:
        bad.write_bytes(damage)
    with caplog.at_level(logging.WARNING):
        names = set(RuntimeStore(tmp_path).by_name())
    assert "good" in names and "torch-distributed" in names and "bad" not in names
    assert str(bad) in caplog.text


def test_trainer_runtimes_and_a_submission_work_beside_a_damaged_file(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    RuntimeStore(root).apply(own_runtime("ClusterTrainingRuntime", "bad"))
    bad = root / RUNTIMES_DIR / "ClusterTrainingRuntime" / "bad" / "runtime.json"
    bad.write_text("")
    result = CliRunner().invoke(cli, ["--backend", "local", "--root", str(root), "runtimes"])
    assert result.exit_code == 0, result.output
    assert "torch-distributed" in result.output
    client = TrainerClient(LocalBackendConfig(root=root, stop_on_exit=True))
    try:
        assert client.get_runtime("torch-distributed").name == "torch-distributed"
    finally:
        client.backend.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("length", [63, 240, 241, 250, 253])
def test_every_runtime_name_the_api_accepts_can_be_stored(tmp_path: Path, length: int) -> None:
    name = "r" * (length - 2) + ".z"
    store = RuntimeStore(tmp_path)
    assert store.apply(own_runtime("ClusterTrainingRuntime", name)) is True
    assert store.apply(own_runtime("TrainingRuntime", name)) is True
    assert RuntimeStore(tmp_path).index().keys() >= {
        ("ClusterTrainingRuntime", name),
        ("TrainingRuntime", name),
    }
    assert store.delete(name, "TrainingRuntime") == "TrainingRuntime"


def test_a_runtime_stored_by_an_earlier_version_is_still_found_and_replaced(
    tmp_path: Path,
) -> None:
    legacy = tmp_path / RUNTIMES_DIR / "TrainingRuntime" / "default" / "old.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps(own_runtime("TrainingRuntime", "old")))
    store = RuntimeStore(tmp_path)
    assert "old" in store.by_name()
    assert store.apply(own_runtime("TrainingRuntime", "old")) is False  # configured, not new
    assert not legacy.exists() and "old" in RuntimeStore(tmp_path).by_name()


@pytest.mark.parametrize("namespace", ["../../../outside", "UPPER", "a/b", "", "x" * 64])
def test_a_namespace_is_checked_before_it_becomes_a_path(tmp_path: Path, namespace: str) -> None:
    planted = tmp_path / "outside" / "planted.json"
    planted.parent.mkdir()
    planted.write_text(json.dumps(own_runtime("TrainingRuntime", "planted")))
    with pytest.raises(
        ValueError, match=r"metadata\.namespace: a namespace must be a DNS-1123 label"
    ):
        RuntimeStore(tmp_path / "root", namespace)


def test_a_trainjob_in_a_climbing_namespace_is_refused_without_reading_there(
    tmp_path: Path,
) -> None:
    root = tmp_path / "jobs"
    outside = root / RUNTIMES_DIR / "TrainingRuntime" / "../../../outside"
    os.makedirs(outside)
    (outside / "planted.json").write_text(json.dumps(own_runtime("TrainingRuntime", "planted")))
    client = TrainerClient(LocalBackendConfig(root=root, stop_on_exit=True))
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "climb", "namespace": "../../../outside"},
        "spec": {"runtimeRef": {"name": "none", "kind": "TrainingRuntime"}},
    }
    try:
        with pytest.raises(ValueError, match=r"metadata\.namespace") as raised:
            client.backend.submit(manifest)  # type: ignore[attr-defined]
        assert "planted" not in str(raised.value)
    finally:
        client.backend.close()  # type: ignore[attr-defined]
