"""On the local backend: a 2-node TrainJob with a checkpoint volume and ``maxRestarts: 1`` loses
rank 1 to SIGKILL mid-run; the JobSet restarts, the training resumes from the latest checkpoint
and ends with the parameters of a run that was never interrupted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_runtime.plugins.checkpoint import VOLUME_ANNOTATION
from trainer_sdk import LocalBackendConfig, TrainerClient, checkpoint, constants
from trainer_sdk.backends.local import volumes

SCRIPT = Path(__file__).with_name("train_script.py")
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def runtime() -> dict[str, Any]:
    """torch-distributed on two nodes, restarting the JobSet once."""
    from trainer_runtime import builtin_runtimes

    doc: dict[str, Any] = builtin_runtimes()["torch-distributed"].to_dict()
    doc["metadata"] = {"name": "torch-restarting"}
    doc["spec"]["mlPolicy"]["numNodes"] = 2
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    return doc


def trainjob(name: str, out: Path, *options: str) -> dict[str, Any]:
    command = ["torchrun", str(SCRIPT), "--mode", "ddp", "--every", "4", "--out", str(out)]
    command += ["--seen", str(out.parent / "seen-{rank}"), *options]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "annotations": {VOLUME_ANNOTATION: "ckpt"}},
        "spec": {
            "runtimeRef": {"name": "torch-restarting"},
            "trainer": {"command": command},
        },
    }


def test_kill_a_rank_and_the_job_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    try:
        outputs = {}
        runs = {"steady": (), "killed": ("--kill-at", "10", "--kill-attempt", "0")}
        for name, options in runs.items():
            work = tmp_path / name
            work.mkdir()
            outputs[name] = work / "out.pt"
            client.submit(trainjob(name, outputs[name], *options), runtime())
            job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
            assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs(name))
        steady, resumed = torch.load(outputs["steady"]), torch.load(outputs["killed"])
        for key, tensor in steady.items():
            assert torch.equal(resumed[key], tensor), key
        # The claim is a local persistent volume, shared by both jobs (a directory per job in it).
        volume = volumes.claim_path("default", "ckpt", root=tmp_path / "jobs")
        found = checkpoint.latest(volume / "killed")
        assert found is not None and (found.step, found.attempt) == (12, 1)
        assert [(r.step, r.attempt) for r in checkpoint.read_resumes(volume / "killed")] == [(8, 1)]
        shown = client.get_job("killed").checkpoint
        assert shown is not None
        assert (shown.step, shown.attempt, shown.resumed_from_step) == (12, 1, 8)
        assert shown.saved_at is not None and 0 <= (shown.age_seconds() or -1) < 600
        client.delete_job("killed")
        assert checkpoint.latest(volume / "killed") == found  # the claim outlives the job
    finally:
        client.backend.close()  # type: ignore[attr-defined]
