"""A TrainJob on gems kernels with one switch (``GemsKernels``, issue 27): a 2-node DDP job on
the local backend (real processes, real torch.distributed over gloo) whose loss curve matches
the ATen job's, both checked against a float64 run of the same training in this process."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient, constants, types
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest
from trainer_sdk.options import GemsKernels

DEADLINE_SECONDS = 300
STEPS = 4
_LOSS = re.compile(r"loss step=(\d+) value=(\S+) gems=(\d+)")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def ddp_training(steps: int, distributed: bool = True, dtype: str = "float32") -> list[float]:
    """A small MLP trained with SGD on a fixed batch of 8. In a job each of the 2 ranks trains
    its half under DistributedDataParallel and rank 0 prints every step's mean loss and whether
    gems is on; with ``distributed=False`` one process computes the same curve (the mean of the
    two halves' losses, whose gradient is what DDP averages), in float64 for the reference.
    Weights and data come from formulas, not the random generator: under gems ``uniform_`` and
    ``normal_`` draw from Triton's Philox stream, not ATen's."""
    import torch
    import torch.distributed as dist
    from torch import nn

    dt = getattr(torch, dtype)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)).to(dt)
    with torch.no_grad():
        for index, param in enumerate(model.parameters()):
            values = torch.arange(param.numel(), dtype=torch.float64) * 0.37 + index
            param.copy_((torch.sin(values) * 0.4).reshape(param.shape))
    inputs = torch.cos(torch.arange(64, dtype=torch.float64) * 0.71).reshape(8, 8).to(dt)
    target = torch.arange(8) % 3
    rank, parts, net = 0, [slice(0, 4), slice(4, 8)], model
    if distributed:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        parts, net = [slice(rank * 4, rank * 4 + 4)], nn.parallel.DistributedDataParallel(model)
    try:
        from gems_kernels.dispatch import enabled_sessions

        gems = len(enabled_sessions())
    except ImportError:
        gems = 0
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    curve = []
    for step in range(steps):
        optimizer.zero_grad()
        losses = [nn.functional.cross_entropy(net(inputs[part]), target[part]) for part in parts]
        loss = sum(losses) / len(losses)
        loss.backward()  # type: ignore[union-attr]
        optimizer.step()
        mean = loss.detach().clone()  # type: ignore[union-attr]
        if distributed:
            dist.all_reduce(mean)
            mean /= dist.get_world_size()
        curve.append(mean.item())
        if rank == 0:
            print(f"loss step={step} value={mean.item()!r} gems={gems}", flush=True)
    if distributed:
        dist.destroy_process_group()
    return curve


def run_job(client: TrainerClient, options: list[object]) -> tuple[list[float], set[int]]:
    name = client.train(
        trainer=CustomTrainer(
            func=ddp_training,
            func_args={"steps": STEPS},
            num_nodes=2,
            resources_per_node={"cpu": 1},
            env={"TRITON_INTERPRET": "1"},  # a CPU rank runs the kernels in Triton's interpreter
        ),
        options=options,  # type: ignore[arg-type]
    )
    job = client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=1)
    logs = "\n".join(client.get_job_logs(name, step="node-0"))
    assert job.status == constants.TRAINJOB_COMPLETE, logs
    found = [_LOSS.search(line) for line in logs.splitlines()]
    matches = [match for match in found if match]
    assert [int(match[1]) for match in matches] == list(range(STEPS)), logs
    return [float(match[2]) for match in matches], {int(match[3]) for match in matches}


@pytest.mark.e2e
def test_a_two_node_ddp_job_on_gems_matches_the_aten_job(client: TrainerClient) -> None:
    expected = ddp_training(STEPS, distributed=False, dtype="float64")
    aten, aten_gems = run_job(client, [])
    gems, gems_gems = run_job(client, [GemsKernels()])
    assert aten_gems == {0} and gems_gems == {1}  # the switch, and only the switch, turns it on
    assert gems == pytest.approx(aten, rel=1e-5)
    assert gems == pytest.approx(expected, rel=1e-5)
    assert aten == pytest.approx(expected, rel=1e-5)
    assert expected[-1] < expected[0]  # it trains


def test_gems_kernels_option_sets_the_env_once(torch_runtime: types.Runtime) -> None:
    """The switch lands in .spec.trainer.env beside the trainer's own variables, replacing a
    TRAINER_GEMS the trainer set itself."""
    trainer = CustomTrainer(func=ddp_training, env={"TRAINER_GEMS": "0", "OTHER": "x"})
    manifest = build_trainjob_manifest("job", torch_runtime, trainer, options=[GemsKernels()])
    assert manifest["spec"]["trainer"]["env"] == [
        {"name": "OTHER", "value": "x"},
        {"name": "TRAINER_GEMS", "value": "1"},
    ]
    off = build_trainjob_manifest("job", torch_runtime, trainer, options=[GemsKernels(False)])
    assert off["spec"]["trainer"]["env"][-1] == {"name": "TRAINER_GEMS", "value": "0"}


def test_gems_kernels_option_refuses_what_it_cannot_switch() -> None:
    from trainer_sdk import CustomTrainerContainer

    with pytest.raises(ValueError, match="GemsKernels can only be used with CustomTrainer"):
        GemsKernels()({}, CustomTrainerContainer(image="python:3.11"), None)
    with pytest.raises(ValueError, match=r"GemsKernels\.enabled: expected a bool, got 'yes'"):
        GemsKernels(enabled="yes")  # type: ignore[arg-type]
