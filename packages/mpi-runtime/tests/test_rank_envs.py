import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mpi_runtime import InvalidArgumentError, mpirun_command, rank_env

OPENMPI = {
    "OMPI_COMM_WORLD_RANK": "5",
    "OMPI_COMM_WORLD_SIZE": "8",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
}
HYDRA = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param(
            {**OPENMPI, "MASTER_ADDR": "job-node-0-0.job", "MASTER_PORT": "1234"},
            {
                "RANK": "5",
                "WORLD_SIZE": "8",
                "LOCAL_RANK": "1",
                "LOCAL_WORLD_SIZE": "4",
                "MASTER_ADDR": "job-node-0-0.job",
                "MASTER_PORT": "1234",
            },
            id="openmpi",
        ),
        pytest.param(
            {**HYDRA, "MASTER_ADDR": "h0"},
            {
                "RANK": "3",
                "WORLD_SIZE": "4",
                "LOCAL_RANK": "1",
                "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "h0",
                "MASTER_PORT": "29500",
            },
            id="hydra-default-port",
        ),
    ],
)
def test_rank_env_maps_mpi_variables(environ: dict[str, str], expected: dict[str, str]) -> None:
    assert rank_env(environ) == expected


@pytest.mark.parametrize(
    ("environ", "missing"),
    [
        pytest.param({"MASTER_ADDR": "h"}, "RANK", id="not-under-mpirun"),
        pytest.param(OPENMPI, "MASTER_ADDR", id="no-master-addr"),
    ],
)
def test_rank_env_says_what_is_missing(environ: dict[str, str], missing: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^environ: {missing}"):
        rank_env(environ)


@pytest.mark.e2e
def test_ranks_get_torch_env_under_real_mpirun(open_mpi: None) -> None:
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")
    show = f"import json, os; os.write(1, (json.dumps({{k: os.environ[k] for k in {names}}}) + chr(10)).encode())"  # noqa: E501
    argv = mpirun_command(
        "OpenMPI",
        [sys.executable, "-m", "mpi_runtime.with_rank_env", sys.executable, "-c", show],
        np=3,
        set_env={"MASTER_ADDR": "127.0.0.1"},
        allow_run_as_root=True,
        oversubscribe=True,
    )
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = sorted((json.loads(line) for line in result.stdout.splitlines()), key=str)
    assert seen == [
        {"RANK": str(r), "WORLD_SIZE": "3", "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1"}
        for r in range(3)
    ]


TORCH_ALL_REDUCE = """\
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo")  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
os.write(1, f"rank {dist.get_rank()} {dist.get_world_size()} {os.environ['LOCAL_RANK']} {value.item()}\\n".encode())
dist.destroy_process_group()
"""  # noqa: E501


@pytest.mark.e2e
def test_torch_distributed_initialises_from_the_rank_env(
    tmp_path: Path, mpi_launch: Callable[..., subprocess.CompletedProcess[str]], open_mpi: None
) -> None:
    script = tmp_path / "all_reduce.py"
    script.write_text(TORCH_ALL_REDUCE)
    result = mpi_launch(
        "--np", "2", "--oversubscribe", "--rank-env", "--", sys.executable, str(script),
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert lines == ["rank 0 2 0 3.0", "rank 1 2 1 3.0"]
