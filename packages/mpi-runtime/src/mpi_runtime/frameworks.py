"""Launch commands for frameworks that bring their own MPI launcher: DeepSpeed and MLX.

DeepSpeed's ``deepspeed`` CLI composes ``mpirun`` itself. Left alone it guesses ``MASTER_ADDR``
with ``hostname -I`` and pins Open MPI's TCP traffic to ``eth0``; ``deepspeed_command`` passes rank
0's host and the interface explicitly. DeepSpeed reads hostfiles as ``host slots=N`` whatever the
launcher, so write them with ``hostfile(hosts, slots, "OpenMPI")``. (Launching a DeepSpeed script
with ``mpi-launch --rank-env`` works too and needs neither: ranks get RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT, which ``deepspeed.init_distributed`` uses as they are.)

MLX's ``mx.distributed.init(backend="mpi")`` loads Open MPI's ``libmpi`` at run time and
initialises MPI itself, so MLX jobs run on Open MPI and are not wrapped in ``python -m mpi4py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mpi_runtime._arguments import require_positive_int, require_text
from mpi_runtime.errors import InvalidArgumentError
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation
from mpi_runtime.rank_envs import MASTER_PORT
from mpi_runtime.ssh_configs import SSH_PORT

__all__ = ["DEEPSPEED_LAUNCHERS", "deepspeed_command", "mlx_launch_command"]

DEEPSPEED_LAUNCHERS: Final = {
    Implementation.OPENMPI: "openmpi",
    Implementation.MPICH: "mpich",
    Implementation.INTEL: "impi",
}
"""DeepSpeed's ``--launcher`` name for each implementation."""


def deepspeed_command(
    impl: ImplementationLike,
    hostfile_path: str,
    command: Sequence[str],
    *,
    master_addr: str,
    master_port: int = MASTER_PORT,
    ssh_port: int = SSH_PORT,
    interface: str | None = None,
    deepspeed: str = "deepspeed",
) -> list[str]:
    """The ``deepspeed`` argv running ``command`` (script and its arguments) over the hostfile."""
    implementation = parse_implementation(impl)
    require_text(hostfile_path, "hostfile_path", "a file path")
    require_text(master_addr, "master_addr", "rank 0's host name")
    require_positive_int(master_port, "master_port")
    require_positive_int(ssh_port, "ssh_port")
    if isinstance(command, str) or not command:
        raise InvalidArgumentError(
            "command", f"expected a script and its arguments, got {command!r}"
        )
    argv = [
        deepspeed,
        "--hostfile", hostfile_path,
        "--launcher", DEEPSPEED_LAUNCHERS[implementation],
        "--master_addr", master_addr,
        "--master_port", str(master_port),
        "--ssh_port", str(ssh_port),
    ]  # fmt: skip
    if interface is not None and implementation is Implementation.OPENMPI:
        argv += ["--launcher_args", f"--mca btl_tcp_if_include {interface}"]
    return [*argv, *command]


def mlx_launch_command(
    command: Sequence[str], *, hostfile_path: str | None = None, np: int | None = None
) -> list[str]:
    """The ``mpi-launch`` argv for an MLX program that calls ``mx.distributed.init("mpi")``."""
    argv = ["mpi-launch", "--impl", "openmpi", "--no-mpi4py"]
    if hostfile_path is not None:
        argv += ["--hostfile", require_text(hostfile_path, "hostfile_path", "a file path")]
    if np is not None:
        argv += ["--np", str(require_positive_int(np, "np"))]
    return [*argv, "--", *command]
