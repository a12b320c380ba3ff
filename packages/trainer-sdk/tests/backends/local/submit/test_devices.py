"""Accelerators this machine lacks: refused up front, or run on CPU with the cluster's count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from trainer_sdk import (
    CustomTrainer,
    InvalidTrainJobError,
    LocalBackendConfig,
    TrainerClient,
    constants,
)
from trainer_sdk.backends.local.submit import devices


def driver(tmp_path: Path, gpus: int) -> Path:
    """A stand-in for /proc/driver/nvidia/gpus listing ``gpus`` GPUs."""
    directory = tmp_path / "gpus"
    for index in range(gpus):
        (directory / f"0000:0{index}:00.0").mkdir(parents=True)
    return directory


@pytest.mark.parametrize(
    ("visible", "expected"),
    [(None, 2), ("0", 1), ("0,1,2", 2), ("", 0), ("-1", 0), ("1,-1,0", 1)],
)
def test_visible_gpus_are_the_drivers_limited_by_cuda_visible_devices(
    tmp_path: Path, visible: str | None, expected: int
) -> None:
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert devices.nvidia_gpus(environ, driver(tmp_path, 2)) == expected
    assert devices.nvidia_gpus({}, tmp_path / "absent") == 0


def report_world() -> None:
    import os

    print(f"world={os.environ['WORLD_SIZE']} rank={os.environ['RANK']}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


def gpus_beyond_this_machine() -> int:
    return devices.nvidia_gpus() + 1


def test_a_gpu_request_this_machine_cannot_meet_is_refused_once_up_front(root: Path) -> None:
    """It ran torchrun's auto: one gloo rank per CPU core, twice the cluster's ranks here."""
    client = TrainerClient(LocalBackendConfig(root=root))
    wanted = gpus_beyond_this_machine()
    trainer = CustomTrainer(func=report_world, num_nodes=2, resources_per_node={"gpu": wanted})
    with pytest.raises(InvalidTrainJobError) as raised:
        client.train(trainer=trainer)
    message = str(raised.value)
    assert f"node-0, node-1 request nvidia.com/gpu: {wanted} per pod" in message
    assert "accelerators_on_cpu=True" in message and message.count("nvidia.com/gpu") == 1
    assert not any(root.iterdir()), "nothing was created"


@pytest.fixture
def on_cpu(root: Path) -> Iterator[TrainerClient]:
    client = TrainerClient(
        LocalBackendConfig(root=root, stop_on_exit=True, accelerators_on_cpu=True)
    )
    yield client
    client.backend.close()  # type: ignore[attr-defined]


@pytest.mark.e2e
def test_with_the_opt_in_a_gpu_job_runs_on_cpu_with_the_clusters_process_count(
    on_cpu: TrainerClient, caplog: pytest.LogCaptureFixture
) -> None:
    wanted = gpus_beyond_this_machine()
    trainer = CustomTrainer(func=report_world, num_nodes=2, resources_per_node={"gpu": wanted})
    name = on_cpu.train(trainer=trainer)
    job = on_cpu.wait_for_job_status(name, timeout=120)
    assert job.status == constants.TRAINJOB_COMPLETE
    worlds = {line for line in on_cpu.get_job_logs(name) if line.startswith("world=")}
    assert {line.split()[0] for line in worlds} == {f"world={2 * wanted}"}
    assert [(step.device, step.device_count) for step in job.steps] == [("cpu", str(wanted))] * 2
    assert [record.message.count("running on CPU") for record in caplog.records] == [1]
