"""trainer apply / get runtime / delete runtime, and an applied runtime used from Python."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from trainer_sdk import (
    CustomTrainerContainer,
    LocalBackendConfig,
    RuntimeNotFoundError,
    TrainerClient,
    TrainerCommand,
    constants,
    types,
)
from trainer_sdk.backends.local.submit.planning import builtin_runtime_manifests
from trainer_sdk.cli import cli

DEADLINE_SECONDS = 120


def own_runtime(kind: str, name: str, max_restarts: int | None = None) -> dict[str, Any]:
    """The built-in torch-distributed runtime as the user's own ``kind`` called ``name``."""
    manifest = builtin_runtime_manifests()["torch-distributed"]
    manifest = {**manifest, "kind": kind, "metadata": {"name": name}}
    manifest.pop("status", None)
    if max_restarts is not None:
        manifest["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    return manifest


def trainer(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--backend", "local", "--root", str(root), *args])
    return result.exit_code, result.output


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def client(root: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=root, stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_apply_creates_then_configures_and_get_delete_runtime(tmp_path: Path, root: Path) -> None:
    file = write(tmp_path / "r.yaml", own_runtime("TrainingRuntime", "mine", 2))
    assert trainer(root, "apply", "-f", str(file)) == (0, "trainingruntime/mine created\n")
    assert trainer(root, "apply", "-f", str(file)) == (0, "trainingruntime/mine configured\n")
    code, output = trainer(root, "get", "runtime", "mine", "-o", "json")
    assert code == 0
    shown = json.loads(output)
    assert shown["kind"] == "TrainingRuntime"
    assert shown["spec"]["template"]["spec"]["failurePolicy"] == {"maxRestarts": 2}
    code, output = trainer(root, "runtimes", "-o", "json")
    assert "mine" in [runtime["name"] for runtime in json.loads(output)]
    code, output = trainer(root, "delete", "runtime", "mine")
    assert code == 0 and "trainingruntime/mine deleted" in output
    code, output = trainer(root, "get", "runtime", "mine")
    assert code == 1 and "'mine' not found" in output
    code, output = trainer(root, "delete", "runtime", "torch-distributed")
    assert code == 1 and "built-in runtime" in output


def test_apply_refuses_an_invalid_file_naming_every_problem(tmp_path: Path, root: Path) -> None:
    broken = own_runtime("TrainingRuntime", "Bad_Name")
    file = write(tmp_path / "r.yaml", broken, {"kind": "ConfigMap", "metadata": {"name": "x"}})
    code, output = trainer(root, "apply", "-f", str(file))
    assert code == 2
    assert "metadata.name" in output and "document 1: kind: expected one of" in output
    assert not (root / ".runtimes").exists()


def test_an_applied_runtime_is_found_by_name_and_by_runtime_object_as_on_a_cluster(
    tmp_path: Path, root: Path, client: TrainerClient
) -> None:
    """train(runtime=Runtime(kind TrainingRuntime)) of a user's runtime: RuntimeNotFoundError."""
    write(tmp_path / "r.yaml", own_runtime("TrainingRuntime", "mine"))
    assert trainer(root, "apply", "-f", str(tmp_path / "r.yaml"))[0] == 0
    runtime = client.get_runtime("mine")
    assert runtime.kind == types.RuntimeKind.TRAINING_RUNTIME
    wrong_kind = types.Runtime("mine", runtime.trainer, types.RuntimeKind.CLUSTER_TRAINING_RUNTIME)
    with pytest.raises(RuntimeNotFoundError, match="'mine' not found"):
        client.train(runtime=wrong_kind, trainer=CustomTrainerContainer(image="i"))


@pytest.mark.e2e
def test_a_runtime_with_max_restarts_restarts_a_failed_job_started_from_train(
    tmp_path: Path, root: Path, client: TrainerClient
) -> None:
    """Restarts worked only through trainer run -f; train() now uses the runtime's policy."""
    write(tmp_path / "r.yaml", own_runtime("TrainingRuntime", "retrying", max_restarts=1))
    assert trainer(root, "apply", "-f", str(tmp_path / "r.yaml"))[0] == 0
    marker = tmp_path / "attempted"
    script = f"if [ -e {marker} ]; then echo second try; else touch {marker}; exit 3; fi"
    name = client.train(
        runtime=client.get_runtime("retrying"),
        trainer=CustomTrainerContainer(image="i", num_nodes=1),
        options=[TrainerCommand(["bash", "-c", script])],
    )
    job = client.wait_for_job_status(name, timeout=DEADLINE_SECONDS)
    assert job.status == constants.TRAINJOB_COMPLETE
    assert job.message is not None and "1 restart" in job.message
    lines = list(client.get_job_logs(name))
    assert lines.index("--- restart 1 ---") < lines.index("second try")
    events = client.get_job_events(name)
    assert [event.message for event in events if event.reason == "Restarting"] == [
        "restart 1 of maxRestarts 1"
    ]
    started = [event for event in events if event.reason == "Started"]
    assert [event.message.endswith("(restart 1)") for event in started] == [False, True]


@pytest.mark.e2e
def test_apply_creates_a_trainjob_on_the_runtime_applied_with_it(
    tmp_path: Path, root: Path, client: TrainerClient
) -> None:
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "applied-job"},
        "spec": {
            "runtimeRef": {"name": "mine", "kind": "TrainingRuntime"},
            "trainer": {"numNodes": 1, "command": ["echo", "ran on mine"]},
        },
    }
    file = write(tmp_path / "all.yaml", job, own_runtime("TrainingRuntime", "mine"))
    code, output = trainer(root, "apply", "-f", str(file))
    assert (code, output) == (0, "trainingruntime/mine created\ntrainjob/applied-job created\n")
    finished = client.wait_for_job_status("applied-job", timeout=DEADLINE_SECONDS)
    assert finished.status == constants.TRAINJOB_COMPLETE
    assert finished.runtime.name == "mine" and "ran on mine" in list(
        client.get_job_logs("applied-job")
    )
