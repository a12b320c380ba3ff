"""The local backend's ``torchrun``: a node of one process runs it without an elastic agent.

    python torchrun_shim.py [torchrun options] SCRIPT [ARGS...]      (the pods' ``torchrun``)
    python torchrun_shim.py [torchrun options] -m MODULE [ARGS...]

torchrun's agent is a second interpreter per node that imports torch, hosts the rendezvous store
and holds an exit barrier; a node that runs one process gets nothing from it on this machine, and
on two cores it cost a job about a third of its launch time. When the launch is a static
rendezvous of fixed size with one process per node (what a TrainJob's ``PET_*`` env describes,
``numProcPerNode: 1``), this execs ``python -u SCRIPT ARGS`` (``python -u -m MODULE ARGS`` for
torchrun's ``-m``/``--module``, as the fine-tuning engines run) with the env torchrun gives its
worker: RANK, LOCAL_RANK 0, WORLD_SIZE, GROUP_RANK, ROLE_*, MASTER_ADDR, MASTER_PORT (rank 0's
``init_process_group`` hosts the store there), TORCHELASTIC_*. Anything else (several processes
per node, elastic sizes, restarts, other rendezvous backends, unknown options) execs the real
``python -m torch.distributed.run`` with the arguments unchanged. The file imports no package, so
it starts as fast as Python does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

__all__ = ["main", "worker_env"]

# torchrun options (and their PET_* env) this shim understands, with their defaults.
_OPTIONS = {
    "nnodes": "1",
    "nproc_per_node": "1",
    "node_rank": "0",
    "master_addr": "127.0.0.1",
    "master_port": "29500",
    "rdzv_backend": "static",
    "max_restarts": "0",
    "rdzv_id": "none",
}


def _parse(args: Sequence[str], environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """torchrun's options (command line over ``PET_*``) and the program; raises ValueError for
    anything this shim leaves to torchrun."""
    unknown = [name for name in environ if name.startswith("PET_")]
    unknown = [name for name in unknown if name[len("PET_") :].lower() not in _OPTIONS]
    if unknown:
        raise ValueError(f"torchrun env {unknown}")
    options = {key: environ.get(f"PET_{key.upper()}", default) for key, default in _OPTIONS.items()}
    index = 0
    module = False
    while index < len(args) and args[index].startswith("-"):
        if args[index] in ("-m", "--module"):
            module = True
            index += 1
            continue
        name, _, value = args[index].lstrip("-").partition("=")
        key = name.replace("-", "_")
        if key not in _OPTIONS:
            raise ValueError(f"torchrun option {args[index]}")
        if not value:
            index += 1
            if index == len(args):
                raise ValueError(f"torchrun option {args[index - 1]} without a value")
            value = args[index]
        options[key] = value
        index += 1
    program = list(args[index:])
    if not program:
        raise ValueError("no training script")
    return options, ["-m", *program] if module else program


def worker_env(options: Mapping[str, str]) -> dict[str, str]:
    """The env torchrun gives the one worker of a node; ValueError unless the launch is a fixed
    static rendezvous with one process per node and no restarts."""
    if options["rdzv_backend"] != "static" or options["max_restarts"] != "0":
        raise ValueError("rendezvous or restarts")
    nnodes, nproc, node_rank = (
        int(options[key]) for key in ("nnodes", "nproc_per_node", "node_rank")
    )  # "1:4" (elastic) or "auto" raise ValueError
    if nproc != 1 or not 0 <= node_rank < nnodes:
        raise ValueError("not one process per node")
    world = str(nnodes)
    rank = str(node_rank)
    return {
        "LOCAL_RANK": "0",
        "RANK": rank,
        "GROUP_RANK": rank,
        "ROLE_RANK": rank,
        "ROLE_NAME": "default",
        "LOCAL_WORLD_SIZE": "1",
        "WORLD_SIZE": world,
        "GROUP_WORLD_SIZE": world,
        "ROLE_WORLD_SIZE": world,
        "MASTER_ADDR": options["master_addr"],
        "MASTER_PORT": options["master_port"],
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": options["rdzv_id"],
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Exec the worker, or the real torchrun when the launch needs its agent."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options, program = _parse(args, os.environ)
        env = {**os.environ, **worker_env(options)}
    except ValueError:  # --no-python, --standalone, ... included: the agent's business
        os.execv(sys.executable, [sys.executable, "-m", "torch.distributed.run", *args])
    os.execve(sys.executable, [sys.executable, "-u", *program], env)


if __name__ == "__main__":
    main()
