"""LocalProcessBackend (our local backend at upstream's path): runtimes as upstream returns them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from trainer_sdk import (
    CustomTrainerContainer,
    LocalProcessBackendConfig,
    Name,
    Runtime,
    RuntimeKind,
    RuntimeNotFoundError,
    TrainerCommand,
)
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.localprocess.backend import LocalProcessBackend
from trainer_sdk.private_files import read_json


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalProcessBackend]:
    local = LocalProcessBackend(cfg=LocalProcessBackendConfig(root=tmp_path, stop_on_exit=True))
    yield local
    local.close()


@pytest.mark.parametrize(
    ("runtime", "packages"),
    [
        pytest.param("torch-distributed", ["torch"], id="torch"),
        pytest.param("deepspeed-distributed", ["deepspeed", "torch"], id="deepspeed"),
        pytest.param("torchtune-llama3.2-1b", ["torchtune", "torch"], id="torchtune"),
    ],
)
def test_runtime_packages_are_returned_not_printed(
    backend: LocalProcessBackend,
    capfd: pytest.CaptureFixture[str],
    runtime: str,
    packages: list[str],
) -> None:
    assert backend.get_runtime_packages(backend.get_runtime(runtime)) == packages
    assert capfd.readouterr() == ("", "")


def test_unknown_runtimes_are_value_errors_as_upstream(backend: LocalProcessBackend) -> None:
    with pytest.raises(ValueError, match="runtime 'nope' not found"):
        backend.get_runtime("nope")
    with pytest.raises(ValueError, match="'nope' not found"):
        backend.get_job("nope")
    with pytest.raises(ValueError, match="'nope' not found"):
        backend.delete_job("nope")


@pytest.mark.e2e
def test_a_hand_built_training_runtime_is_honoured(backend: LocalProcessBackend) -> None:
    """A Runtime object of kind TrainingRuntime names a namespaced runtime, as in a cluster: it
    runs once a TrainingRuntime of that name is applied (``trainer apply -f``)."""
    builtin = backend.get_runtime("torch-distributed")
    runtime = Runtime(builtin.name, builtin.trainer, RuntimeKind.TRAINING_RUNTIME)
    with pytest.raises(RuntimeNotFoundError, match="torch-distributed \\(TrainingRuntime\\)"):
        backend.train(runtime=runtime, trainer=CustomTrainerContainer(image="i"))
    manifest = backend.runtime_store.by_name()["torch-distributed"]
    backend.runtime_store.apply({**manifest, "kind": "TrainingRuntime"})
    name = backend.train(
        runtime=runtime,
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("as-training-runtime"), TrainerCommand(["true"])],
    )
    job_dir = JobDir(backend.root, name)
    assert read_json(job_dir.trainjob)["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
    job = backend.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.runtime.kind is RuntimeKind.TRAINING_RUNTIME
