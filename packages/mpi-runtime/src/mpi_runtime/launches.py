"""``mpi-launch``: wait for every host, then run ``mpirun`` and exit with its outcome.

``plan_launch`` is pure (argv, env, hosts to wait for, ssh client config); ``launch`` waits for
the hosts, writes the ssh config into a private temporary directory and runs the plan. When
ranks run on other hosts, every rank reports its start (``rank_starts``) and ranks that have not
within the start timeout stop mpirun with an error naming their hosts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from mpi_runtime import _launcher_life
from mpi_runtime._arguments import require_text
from mpi_runtime._process_trees import stop_process_tree
from mpi_runtime._versions import VersionAction
from mpi_runtime.commands import mpirun_command, with_mpi4py
from mpi_runtime.errors import InvalidArgumentError, MPIRuntimeError
from mpi_runtime.hostfiles import parse_hostfile, rank_hosts, read_hostfile
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation
from mpi_runtime.launcher_envs import SSH_ARGS, SSH_ARGS_ENV_NAMES, launcher_env
from mpi_runtime.rank_envs import MASTER_PORT
from mpi_runtime.rank_starts import START_REPORT_ENV, StartWatch, blame, route_address
from mpi_runtime.readiness import is_this_machine, wait_for_hosts
from mpi_runtime.ssh_configs import SSH_PORT, ssh_client_config
from mpi_runtime.ssh_keys import SSH_PRIVATE_KEY_FILE, private_identity

__all__ = [
    "START_TIMEOUT_ENV",
    "START_TIMEOUT_S",
    "TERMINATION_LOG",
    "LaunchPlan",
    "detect_implementation",
    "launch",
    "plan_launch",
    "session_dirs",
]

START_TIMEOUT_S: Final = 60.0
"""Default bound, from mpirun's start, on every rank reporting that it started."""
START_TIMEOUT_ENV: Final = "MPI_LAUNCH_START_TIMEOUT"
"""Env that sets ``mpi-launch``'s default start timeout (seconds; 0 turns the bound off)."""
TERMINATION_LOG: Final = Path("/dev/termination-log")
"""Kubernetes' default ``terminationMessagePath``: ``mpi-launch`` writes its error there."""

# On one machine the login shell's startup files add nothing the launcher lacks, but they run
# before every MPI daemon: bash reads ~/.bashrc when sshd starts it, unless SHLVL says it is
# nested (here that ~/.bashrc ran `pyenv init`, whose rehash waits on a lock shared by every
# shell of the machine, up to 60 s).
_LOOPBACK_SESSION_ENV: Final = {"SHLVL": "1"}
_LOOPBACK_ENV: Final[Mapping[Implementation, Mapping[str, str]]] = {
    # Every "host" is this machine: shared-memory transports would collide between them.
    Implementation.OPENMPI: {
        "OMPI_MCA_btl": "self,tcp",
        "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_oob_tcp_if_include": "lo",
        "PRTE_MCA_oob_tcp_if_include": "lo",
    },
    Implementation.INTEL: {"I_MPI_HYDRA_IFACE": "lo"},
    Implementation.MPICH: {"HYDRA_IFACE": "lo"},
}
# Open MPI's daemons keep their session directories under ``<base>/ompi.<node name>.<uid>``: on
# loopback hosts every daemon has this machine's node name, so daemons of one job (and of jobs
# side by side) created and removed the same directories ("session_dir.c ... File exists").
# Every launch gets its own base, and each host its own below it: the daemons through their ssh
# session's env, mpirun through TMPDIR (the MCA parameter would be passed on to every daemon's
# command line, where it beats their env); the ranks get the launcher's TMPDIR back.
_SESSION_BASE_ENV_NAMES: Final = ("OMPI_MCA_orte_tmpdir_base", "PRTE_MCA_prte_tmpdir_base")
_LAUNCHER_SESSION_DIR: Final = "launcher"


def session_dirs(session_root: str, hosts: Sequence[str]) -> dict[str, str]:
    """The session directory base of mpirun (``launcher``) and of each host's daemon."""
    return {name: os.path.join(session_root, name) for name in (_LAUNCHER_SESSION_DIR, *hosts)}


def _session_env(base: str) -> dict[str, str]:
    return dict.fromkeys(_SESSION_BASE_ENV_NAMES, base)


class LaunchPlan(NamedTuple):
    """What ``launch`` runs: ``argv`` with ``env``, after ``remote_hosts`` answer on ssh.

    ``ranks`` is the process count and ``rank_hosts[r]`` the host of rank ``r``; when
    ``reports_starts``, every rank reports its start to the address in ``START_REPORT_ENV``,
    which ``launch`` adds to ``env``.
    """

    argv: list[str]
    env: dict[str, str]
    remote_hosts: list[str]
    ssh_config: str | None
    ranks: int
    rank_hosts: list[str]
    reports_starts: bool


def _hostfile_env_name(implementation: Implementation) -> str:
    return next(iter(launcher_env(implementation, "-", 1)))


def detect_implementation(environ: Mapping[str, str]) -> Implementation:
    """The implementation whose launcher env is set (Open MPI when none is)."""
    for implementation in (Implementation.INTEL, Implementation.MPICH):
        if _hostfile_env_name(implementation) in environ:
            return implementation
    return Implementation.OPENMPI


def plan_launch(
    impl: ImplementationLike,
    command: Sequence[str],
    *,
    environ: Mapping[str, str],
    hostfile_path: str | None = None,
    hostfile_text: str | None = None,
    np: int | None = None,
    local_slots: int = 1,
    ssh_port: int = SSH_PORT,
    ssh_config_path: str = "",
    session_root: str = "",
    identity_file: Path | None = None,
    ssh_connection_log: Path | None = None,
    loopback: bool = False,
    master_port: int = MASTER_PORT,
    export: Sequence[str] = (),
    oversubscribe: bool = False,
    tag_output: bool = False,
    use_mpi4py: bool = True,
    rank_env: bool = False,
    report_starts: bool = True,
    run_as_root: bool = False,
    python: str = sys.executable,
    mpirun: str = "mpirun",
    is_local: Callable[[str], bool] = is_this_machine,
) -> LaunchPlan:
    """The plan for running ``command`` on every slot of the hostfile (or ``local_slots`` here).

    ``MASTER_ADDR`` is the first hostfile host (rank 0's) and ``MASTER_PORT`` is ``master_port``,
    unless ``environ`` sets them.
    ``loopback``: every host is this machine (the local backend's loopback sshds); MPI traffic
    is pinned to ``lo`` over TCP, and Open MPI keeps its session directories under
    ``session_dirs(session_root, hosts)``, one per host (required then).
    ``report_starts``: when some host is remote, every rank reports its start (through the
    ``with_rank_env`` wrapper, else ``with_start_report``), forwarding ``START_REPORT_ENV``.
    """
    implementation = parse_implementation(impl)
    entries = parse_hostfile(hostfile_text) if hostfile_text is not None else []
    remote_hosts = [entry.host for entry in entries if not is_local(entry.host)]
    env = dict(environ)
    env.setdefault("MASTER_ADDR", entries[0].host if entries else "127.0.0.1")
    env.setdefault("MASTER_PORT", str(master_port))
    ssh_config = None
    sessions: dict[str, str] = {}
    rank_env_values: dict[str, str] = {}
    if loopback and implementation is Implementation.OPENMPI:
        require_text(session_root, "session_root", "where session directories will be kept")
        sessions = session_dirs(session_root, list(dict.fromkeys(remote_hosts)))
        env["TMPDIR"] = sessions.pop(_LAUNCHER_SESSION_DIR)
        rank_env_values["TMPDIR"] = environ.get("TMPDIR") or "/tmp"
    if remote_hosts:
        require_text(ssh_config_path, "ssh_config_path", "where the ssh config will be written")
        ssh_config = ssh_client_config(
            port=ssh_port,
            identity_file=identity_file,
            connection_log=ssh_connection_log,
            set_env=_LOOPBACK_SESSION_ENV if loopback else None,
            host_env={host: _session_env(base) for host, base in sessions.items()},
        )
        for name in SSH_ARGS_ENV_NAMES[implementation]:
            env[name] = f"-F {ssh_config_path} {environ.get(name, SSH_ARGS)}"
    if loopback:
        env.update(_LOOPBACK_ENV[implementation])
    if use_mpi4py:
        command = with_mpi4py(command, python)
    reports_starts = report_starts and bool(remote_hosts)
    if rank_env:
        command = [python, "-m", "mpi_runtime.with_rank_env", *command]
    elif reports_starts:
        command = [python, "-m", "mpi_runtime.with_start_report", *command]
    ranks = np if np is not None else (sum(e.slots for e in entries) or local_slots)
    argv = mpirun_command(
        implementation,
        command,
        np=ranks,
        hostfile=hostfile_path,
        forward_env=[
            "MASTER_ADDR",
            "MASTER_PORT",
            *([START_REPORT_ENV] if reports_starts else []),
            *export,
        ],
        set_env=rank_env_values,
        allow_run_as_root=run_as_root,
        oversubscribe=oversubscribe,
        tag_output=tag_output,
        mpirun=mpirun,
    )
    return LaunchPlan(
        argv=argv,
        env=env,
        remote_hosts=remote_hosts,
        ssh_config=ssh_config,
        ranks=ranks,
        rank_hosts=rank_hosts(entries),
        reports_starts=reports_starts,
    )


def _free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _connected_hosts(connection_log: Path | None) -> set[str]:
    """The hosts ssh got into (the ``LocalCommand`` log of the ssh config)."""
    if connection_log is None:
        return set()
    try:
        return set(connection_log.read_text().split())
    except FileNotFoundError:
        return set()


def _run(
    plan: LaunchPlan,
    start_watch: StartWatch | None,
    start_timeout_s: float,
    connection_log: Path | None,
) -> int:
    """Run the plan's argv, passing SIGINT/SIGTERM on; its exit code (128+N when killed by
    signal N). With ``start_watch``, stop it and raise ``RanksNotStartedError`` when ranks have
    not reported their start within ``start_timeout_s``."""
    # mpirun stops (and stops its ranks) when mpi-launch dies, even by SIGKILL.
    process = subprocess.Popen(plan.argv, env=plan.env, preexec_fn=_launcher_life.die_with_parent())

    def forward(signum: int, _frame: object) -> None:
        process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if start_watch is not None:
            missing = start_watch.wait(
                plan.ranks, start_timeout_s, lambda: process.poll() is not None
            )
            if missing:
                stop_process_tree(process)
                raise blame(
                    missing,
                    plan.rank_hosts,
                    plan.remote_hosts,
                    _connected_hosts(connection_log),
                    start_timeout_s,
                )
        code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def launch(
    impl: ImplementationLike,
    command: Sequence[str],
    *,
    hostfile_path: str | None = None,
    wait_timeout_s: float = 300.0,
    start_timeout_s: float = START_TIMEOUT_S,
    ssh_dir: Path | None = None,
    ssh_port: int = SSH_PORT,
    environ: Mapping[str, str] | None = None,
    **plan_options: Any,
) -> int:
    """Wait for the hostfile's hosts, run mpirun, return its exit code.

    Without ``hostfile_path``, the hostfile is the one the launcher env names, if any.
    ``start_timeout_s`` bounds, from mpirun's start, the ranks' start reports when some host is
    remote (0: no bound); ``RanksNotStartedError`` names the hosts of the ranks that never
    reported. ``plan_options`` are ``plan_launch``'s keyword arguments.
    """
    if start_timeout_s < 0:
        raise InvalidArgumentError(
            "start_timeout_s", f"expected seconds >= 0 (0: no bound), got {start_timeout_s!r}"
        )
    environ = dict(os.environ if environ is None else environ)
    implementation = parse_implementation(impl)
    # A hostfile named by the launcher env is read here (hosts to wait for, rank 0's host) and
    # left to mpirun to find through that env, as it would be without mpi-launch.
    hostfile_to_read = hostfile_path or environ.get(_hostfile_env_name(implementation))
    hostfile_text = read_hostfile(hostfile_to_read) if hostfile_to_read else None
    # Ranks on other hosts (or on loopback "hosts") need private files; ranks here need none.
    needs_files = hostfile_text is not None or bool(plan_options.get("loopback"))
    with _private_dir(needs_files) as private_dir:
        identity = None
        key = ssh_dir / SSH_PRIVATE_KEY_FILE if ssh_dir is not None else None
        if private_dir is not None and key is not None and key.exists():
            identity = private_identity(key, private_dir)
        config_path = private_dir / "ssh_config" if private_dir else None
        connection_log = private_dir / "ssh_connections" if private_dir else None
        plan = plan_launch(
            implementation,
            command,
            environ=environ,
            hostfile_path=hostfile_path,
            hostfile_text=hostfile_text,
            ssh_config_path=str(config_path or ""),
            session_root=str(private_dir / "sessions") if private_dir else "",
            identity_file=identity,
            ssh_connection_log=connection_log if start_timeout_s > 0 else None,
            local_slots=os.cpu_count() or 1,
            ssh_port=ssh_port,
            # On this machine only: a free port, so concurrent local jobs never share a store.
            master_port=MASTER_PORT if hostfile_text else _free_local_port(),
            run_as_root=os.geteuid() == 0,
            report_starts=start_timeout_s > 0,
            **plan_options,
        )
        if config_path is not None and plan.ssh_config is not None:
            config_path.write_text(plan.ssh_config)
        wait_for_hosts(plan.remote_hosts, ssh_port, wait_timeout_s)
        if not plan.reports_starts:
            return _run(plan, None, start_timeout_s, connection_log)
        # Listen where the first remote host reaches this machine (resolvable only now).
        with StartWatch(route_address(plan.remote_hosts[0], ssh_port)) as watch:
            plan = plan._replace(env={**plan.env, START_REPORT_ENV: watch.env_value})
            return _run(plan, watch, start_timeout_s, connection_log)


@contextlib.contextmanager
def _private_dir(needed: bool) -> Iterator[Path | None]:
    """A private temporary directory for the launch's files, when ``needed``; else None.

    tempfile is imported only then: with shutil and the compression modules that come with it,
    it would add milliseconds to every start of a launch on this machine alone.
    """
    if not needed:
        yield None
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mpi-launch-") as directory:
        yield Path(directory)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpi-launch",
        description="Wait for every host's sshd, then run CMD on every slot with mpirun.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument(
        "--impl",
        choices=["openmpi", "intel", "mpich"],
        default=None,
        help="MPI implementation (default: from the launcher env, else openmpi)",
    )
    parser.add_argument(
        "--hostfile",
        default=None,
        help="hostfile (default: the launcher env's; none: run on this machine)",
    )
    parser.add_argument(
        "--np",
        type=int,
        default=None,
        help="process count (default: all hostfile slots, or CPU count)",
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for every host's sshd (default: 300)",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds, from mpirun's start, for every rank to start when some host is remote; "
        f"0: no bound (default: ${START_TIMEOUT_ENV}, else {START_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--termination-log",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"write the error here when mpi-launch fails (default: {TERMINATION_LOG}, "
        "when it exists, as in a Kubernetes container)",
    )
    parser.add_argument("--ssh-port", type=int, default=SSH_PORT)
    parser.add_argument(
        "--ssh-dir",
        type=Path,
        default=Path.home() / ".ssh",
        help="directory holding the job's id_rsa (default: ~/.ssh)",
    )
    parser.add_argument(
        "--loopback",
        action="store_true",
        help="every host is this machine: MPI over TCP on lo (local backend)",
    )
    parser.add_argument(
        "-x",
        "--export",
        action="append",
        default=[],
        metavar="NAME",
        help="forward this env variable to every rank (repeatable)",
    )
    parser.add_argument("--oversubscribe", action="store_true")
    parser.add_argument("--tag-output", action="store_true", help="prefix output with the rank")
    parser.add_argument(
        "--rank-env",
        action="store_true",
        help="set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT on each rank",
    )
    parser.add_argument(
        "--no-mpi4py",
        dest="use_mpi4py",
        action="store_false",
        help="do not run Python programs through python -m mpi4py",
    )
    parser.add_argument("--mpirun", default="mpirun", help="mpirun executable")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD...")
    return parser


def _start_timeout(option: float | None, environ: Mapping[str, str]) -> float:
    """The start timeout: the option, else ``START_TIMEOUT_ENV``, else ``START_TIMEOUT_S``."""
    if option is not None:
        return option
    value = environ.get(START_TIMEOUT_ENV, "")
    try:
        return float(value) if value else START_TIMEOUT_S
    except ValueError:
        raise InvalidArgumentError(
            START_TIMEOUT_ENV, f"expected seconds (0: no bound), got {value!r}"
        ) from None


def _write_termination_log(path: Path | None, message: str) -> None:
    """``message`` into ``path``, or into Kubernetes' termination log when it exists."""
    target = path if path is not None else TERMINATION_LOG
    if path is None and not TERMINATION_LOG.exists():
        return
    try:
        target.write_text(message + "\n")
    except OSError as error:
        print(f"mpi-launch: warning: cannot write {target}: {error}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mpi-launch``."""
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("expected a command after --")
    impl = args.impl or detect_implementation(os.environ)
    if not _launcher_life.become_subreaper():
        print(
            "mpi-launch: warning: no prctl on this system: processes that ranks start may "
            "outlive mpi-launch",
            file=sys.stderr,
        )
    try:
        return launch(
            impl,
            command,
            hostfile_path=args.hostfile,
            wait_timeout_s=args.wait_timeout,
            start_timeout_s=_start_timeout(args.start_timeout, os.environ),
            ssh_dir=args.ssh_dir,
            np=args.np,
            ssh_port=args.ssh_port,
            loopback=args.loopback,
            export=args.export,
            oversubscribe=args.oversubscribe,
            tag_output=args.tag_output,
            use_mpi4py=args.use_mpi4py,
            rank_env=args.rank_env,
            mpirun=args.mpirun,
        )
    except (MPIRuntimeError, OSError) as error:
        print(f"mpi-launch: error: {error}", file=sys.stderr)
        _write_termination_log(args.termination_log, f"mpi-launch: error: {error}")
        return 1
    finally:
        # What ranks started and left behind was adopted by this subreaper: it ends with us.
        _launcher_life.end_leftovers()


if __name__ == "__main__":
    sys.exit(main())
