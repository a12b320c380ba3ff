import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mpi_runtime import InvalidArgumentError, deepspeed_command, mlx_launch_command

Launch = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(
    ("impl", "interface", "launcher", "tail"),
    [
        pytest.param("OpenMPI", "lo", "openmpi", ["--launcher_args", "--mca btl_tcp_if_include lo"],
                     id="openmpi-with-interface"),
        pytest.param("OpenMPI", None, "openmpi", [], id="openmpi"),
        pytest.param("MPICH", "lo", "mpich", [], id="mpich-ignores-mca"),
        pytest.param("Intel", None, "impi", [], id="intel-is-impi"),
    ],
)  # fmt: skip
def test_deepspeed_command_names_launcher_and_rank_zero(
    impl: str, interface: str | None, launcher: str, tail: list[str]
) -> None:
    argv = deepspeed_command(
        impl, "/etc/mpi/hostfile", ["train.py", "--zero", "2"],
        master_addr="job-node-0-0.job", interface=interface,
    )  # fmt: skip
    assert argv == [
        "deepspeed", "--hostfile", "/etc/mpi/hostfile", "--launcher", launcher,
        "--master_addr", "job-node-0-0.job", "--master_port", "29500", "--ssh_port", "2222",
        *tail, "train.py", "--zero", "2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        pytest.param({"master_addr": ""}, "master_addr", id="no-master"),
        pytest.param({"master_addr": "h", "master_port": 0}, "master_port", id="bad-port"),
    ],
)
def test_deepspeed_command_rejects_bad_input(options: dict[str, object], argument: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^{argument}: "):
        deepspeed_command("OpenMPI", "/h", ["t.py"], **options)  # type: ignore[arg-type]


def test_mlx_launch_command_uses_open_mpi_without_mpi4py() -> None:
    assert mlx_launch_command(["python3", "mlx_train.py"], hostfile_path="/etc/mpi/hostfile") == [
        "mpi-launch", "--impl", "openmpi", "--no-mpi4py", "--hostfile", "/etc/mpi/hostfile",
        "--", "python3", "mlx_train.py",
    ]  # fmt: skip


DEEPSPEED_TRAIN = """\
import json
import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed
import torch
import torch.distributed as dist

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
initial = torch.cat([p.detach().flatten() for p in model.parameters()]).clone()
deepspeed.init_distributed(dist_backend="gloo")
config = {
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 1,
    "zero_optimization": {"stage": 2},
    "zero_allow_untested_optimizer": True,
}
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
rank, world = dist.get_rank(), dist.get_world_size()
data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
for _ in range(3):
    x = torch.randn(4, 8, generator=data)
    loss = torch.nn.functional.mse_loss(engine(x), x.sum(dim=1, keepdim=True))
    engine.backward(loss)
    engine.step()
flat = torch.cat([p.detach().flatten() for p in engine.module.parameters()])
gathered = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(gathered, flat)
result = {
    "rank": rank,
    "world": world,
    "stage": engine.zero_optimization_stage(),
    "equal": all(torch.equal(gathered[0], other) for other in gathered),
    "changed": not torch.equal(flat, initial),
}
os.write(1, (json.dumps(result) + "\\n").encode())
# A gloo worker thread may free the last collective's work after interpreter finalization began
# (torch 2.13: std::terminate, SIGABRT, one run in three here); end as trainer_sdk's rank
# entrypoint does, without finalization.
dist.destroy_process_group()
os._exit(0)
"""


@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="deepspeed is not installed (pip install deepspeed; torch stays 2.13.0)",
)
def test_deepspeed_zero2_on_cpu_keeps_ranks_in_step(
    tmp_path: Path, mpi_launch: Launch, open_mpi: None
) -> None:
    script = tmp_path / "train.py"
    script.write_text(DEEPSPEED_TRAIN)
    result = mpi_launch(
        "--np", "2", "--oversubscribe", "--rank-env", "--", sys.executable, str(script),
        timeout=600, DS_ACCELERATOR="cpu",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(lines, key=lambda r: r["rank"]) == [
        {"rank": rank, "world": 2, "stage": 2, "equal": True, "changed": True} for rank in (0, 1)
    ]


MLX_SUM = """\
import os
import mlx.core as mx
group = mx.distributed.init(backend="mpi")
total = mx.distributed.all_sum(mx.array([float(group.rank())]), group=group)
mx.eval(total)
os.write(1, f"rank {group.rank()} {group.size()} {total.item()}\\n".encode())
"""


@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("mlx") is None, reason="mlx is not installed (pip install 'mlx[cpu]')"
)
def test_mlx_all_sum_over_mpi(tmp_path: Path, mpi_launch: Launch, open_mpi: None) -> None:
    script = tmp_path / "mlx_sum.py"
    script.write_text(MLX_SUM)
    argv = mlx_launch_command([sys.executable, str(script)], np=2)
    assert argv[0] == "mpi-launch"
    result = mpi_launch(*argv[1:])
    assert result.returncode == 0, result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert lines == ["rank 0 2 1.0", "rank 1 2 1.0"]
