import json
import subprocess
import sys

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


def test_ranks_get_torch_env_under_real_mpirun() -> None:
    show = "import json, os; print(json.dumps({k: os.environ[k] for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'MASTER_ADDR')}))"  # noqa: E501
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
