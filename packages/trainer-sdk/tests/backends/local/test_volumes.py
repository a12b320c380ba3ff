"""Persistent volume claims: local volumes that outlive jobs, shared by every job naming them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from trainer_sdk import (
    CustomTrainerContainer,
    LocalBackendConfig,
    Name,
    TrainerClient,
    TrainerCommand,
    constants,
)
from trainer_sdk.backends.local import volumes
from trainer_sdk.cli import cli
from trainer_sdk.options import (
    ContainerPatch,
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobSpecPatch,
    JobTemplatePatch,
    PodSpecPatch,
    PodTemplatePatch,
    ReplicatedJobPatch,
    RuntimePatch,
    TrainingRuntimeSpecPatch,
)

pytestmark = pytest.mark.e2e
DEADLINE_SECONDS = 120


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def client(root: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=root, stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def claim_mounted_at(path: str, claim: str) -> RuntimePatch:
    """The node pods mount persistentVolumeClaim ``claim`` at ``path``."""
    pod = PodSpecPatch(
        volumes=[{"name": "ckpt", "persistentVolumeClaim": {"claimName": claim}}],
        containers=[
            ContainerPatch(name="node", volume_mounts=[{"name": "ckpt", "mountPath": path}])
        ],
    )
    job = ReplicatedJobPatch(
        name=constants.NODE,
        template=JobTemplatePatch(spec=JobSpecPatch(template=PodTemplatePatch(spec=pod))),
    )
    return RuntimePatch(
        training_runtime_spec=TrainingRuntimeSpecPatch(
            template=JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[job]))
        )
    )


def run(client: TrainerClient, name: str, command: str, claim: str = "shared") -> str:
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[
            Name(name),
            TrainerCommand(["bash", "-c", command]),
            claim_mounted_at("/ckpt", claim),
        ],
    )
    job = client.wait_for_job_status(
        name, {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED}, timeout=DEADLINE_SECONDS
    )
    assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs(name))
    return "\n".join(client.get_job_logs(name))


def test_a_claim_written_by_one_job_is_read_by_the_next_and_survives_deleting_it(
    client: TrainerClient, root: Path
) -> None:
    """Job B read its own empty directory before: FileNotFoundError on A's checkpoint."""
    run(client, "writer", "echo saved-by-writer > /ckpt/step-10")
    client.delete_job("writer")
    assert "saved-by-writer" in run(client, "reader", "cat /ckpt/step-10")
    directory = volumes.claim_path("default", "shared", root)
    assert (directory / "step-10").read_text() == "saved-by-writer\n"
    [claim] = volumes.list_claims(root)
    assert (claim.namespace, claim.name, claim.jobs) == ("default", "shared", ("reader",))
    assert claim.size_bytes == len("saved-by-writer\n")


def test_trainer_volumes_lists_and_deletes_and_refuses_a_claim_in_use(
    client: TrainerClient, root: Path
) -> None:
    run(client, "first", "echo x > /ckpt/f", claim="data")
    runner = CliRunner()
    listed = runner.invoke(cli, ["--root", str(root), "volumes", "-o", "json"])
    assert listed.exit_code == 0, listed.output
    [claim] = json.loads(listed.output)
    assert claim == {
        "namespace": "default",
        "name": "data",
        "path": str(root / ".volumes" / "default" / "data"),
        "sizeBytes": 2,
        "jobs": ["first"],
    }
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("busy"), TrainerCommand(["sleep", "120"]), claim_mounted_at("/ckpt", "data")],
    )
    refused = runner.invoke(cli, ["--root", str(root), "volumes", "delete", "data"])
    assert refused.exit_code == 1
    assert "mounted by running jobs: busy" in refused.output
    client.delete_job("busy")
    deleted = runner.invoke(cli, ["--root", str(root), "volumes", "delete", "data"])
    assert deleted.exit_code == 0, deleted.output
    assert not (root / ".volumes" / "default" / "data").exists()
    assert client.get_job("first").status == constants.TRAINJOB_COMPLETE


def test_a_job_with_volumes_warns_once_that_pods_see_local_directories(
    client: TrainerClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing said that a mount path passed in func_args named the host's own path."""
    run(client, "warned", "true")
    warnings = [record.getMessage() for record in caplog.records if "/ckpt" in record.getMessage()]
    assert len(warnings) == 1 and "func_args" in warnings[0], warnings
