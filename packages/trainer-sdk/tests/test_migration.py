"""Upstream's local quickstart, written against ``kubeflow.trainer`` 0.5.0, with only the
package name in its imports changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk.api.trainer_client import TrainerClient
from trainer_sdk.backends.localprocess.types import LocalProcessBackendConfig
from trainer_sdk.constants import constants
from trainer_sdk.types import types

pytestmark = pytest.mark.e2e


def train_fn(greeting: str) -> None:
    import os

    print(f"{greeting} from rank {os.environ['RANK']}")


def test_upstreams_local_quickstart_runs_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINER_SDK_ROOT", str(tmp_path / "jobs"))
    client = TrainerClient(backend_config=LocalProcessBackendConfig())
    runtime = client.get_runtime("torch-distributed")
    assert runtime.kind == types.RuntimeKind.CLUSTER_TRAINING_RUNTIME
    assert client.get_runtime_packages(runtime) == ["torch"]
    job_name = client.train(
        runtime="torch-distributed",
        trainer=types.CustomTrainer(func=train_fn, func_args={"greeting": "hello"}),
    )
    seen: list[str] = []
    job = client.wait_for_job_status(
        job_name, timeout=120, polling_interval=1, callbacks=[lambda job: seen.append(job.status)]
    )
    assert job.status == constants.TRAINJOB_COMPLETE and seen[-1] == constants.TRAINJOB_COMPLETE
    assert "hello from rank 0" in list(client.get_job_logs(name=job_name))
    client.delete_job(job_name)
    with pytest.raises(ValueError, match="not found"):
        client.get_job(job_name)
