"""The local JobSet runner tells each attempt its number through the pod's restart-attempt
label, as JobSet does, so checkpoints and resumes record which attempt they belong to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from trainer_runtime.plugins.checkpoint import ATTEMPT_ENV, RESTART_ATTEMPT_LABEL
from trainer_sdk.backends.local.jobdir import JobDir

from ..backends.local.supervisor.test_runner import runner_for

pytestmark = pytest.mark.e2e


def test_each_attempt_sees_its_restart_number(tmp_path: Path) -> None:
    script = (
        'echo "$TRAINER_RESTART_ATTEMPT" >> "$SHARED/attempts"; [ "$TRAINER_RESTART_ATTEMPT" = 2 ]'
    )
    container = {
        "name": "node",
        "image": "img",
        "command": ["bash", "-c", script],
        "env": [
            {
                "name": ATTEMPT_ENV,
                "valueFrom": {
                    "fieldRef": {"fieldPath": f"metadata.labels['{RESTART_ATTEMPT_LABEL}']"}
                },
            }
        ],
    }
    manifest = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "job"},
        "spec": {
            "failurePolicy": {"maxRestarts": 2},
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": 1,
                    "template": {"spec": {"template": {"spec": {"containers": [container]}}}},
                }
            ],
        },
    }
    runner = runner_for(manifest, JobDir(tmp_path, "job"), {**os.environ, "SHARED": str(tmp_path)})
    status = runner.run()
    assert [c["type"] for c in status["conditions"]] == ["Completed"]
    assert (tmp_path / "attempts").read_text().split() == ["0", "1", "2"]


def test_the_sdk_names_the_attempt_as_the_checkpoint_plugin_does() -> None:
    """The local runner and the in-pod API use the SDK's light constants (no runtime import in
    a rank or the supervisor); they must be the plugin's, which sets them in a cluster."""
    from trainer_sdk import checkpoint, constants
    from trainer_sdk.checkpoint import status as checkpoint_status

    assert checkpoint.ATTEMPT_ENV == checkpoint_status.ATTEMPT_ENV == ATTEMPT_ENV
    assert constants.JOBSET_RESTART_ATTEMPT_LABEL == RESTART_ATTEMPT_LABEL
