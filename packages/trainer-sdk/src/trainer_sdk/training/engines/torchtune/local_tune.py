"""The local backend's ``tune`` (the torchtune engine's command): the recipe of ``tune run
RECIPE.py`` starts as torchtune's CLI would start it, less an interpreter per node.

``tune run`` imports torchtune (several seconds of CPU) to parse its arguments, then runs a
recipe of one process in itself, or hands a distributed one to torchrun, whose agent starts the
worker: a second interpreter per node importing torchtune again. Here a recipe given as a path
(the SDK's, as the runtimes name it) runs as its module: in this process's stead without torchrun
options, else through the local ``torchrun`` (``torchrun_shim``: one process per node runs
without the agent); ``--rdzv_endpoint`` (what the runtime gives torchtune jobs) is torchrun's
static rendezvous at that address. Anything else (other subcommands, torchtune's built-in
recipes) is torchtune's own CLI. The recipe resolves a built-in config's name itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from trainer_sdk.backends.local.pod import torchrun_shim

__all__ = ["main", "torchrun_arguments"]

_ENDPOINT = "--rdzv_endpoint"


def _endpoint_as_master(options: Sequence[str]) -> list[str]:
    """torchrun's options with ``--rdzv_endpoint HOST:PORT`` as the master's address and port
    (the same rendezvous for torchrun's default, static, backend)."""
    translated: list[str] = []
    index = 0
    while index < len(options):
        option = options[index]
        if option == _ENDPOINT and index + 1 < len(options):
            index += 1
            option = f"{_ENDPOINT}={options[index]}"
        if option.startswith(f"{_ENDPOINT}="):
            host, _, port = option.split("=", 1)[1].rpartition(":")
            translated += [f"--master_addr={host}", f"--master_port={port}"]
        else:
            translated.append(option)
        index += 1
    return translated


def torchrun_arguments(argv: Sequence[str]) -> list[str] | None:
    """What ``tune ARGV`` runs as ``torchrun`` arguments (``[]`` before ``-m``: one process,
    started without torchrun), or None when it is torchtune's CLI's to run."""
    if list(argv[:1]) != ["run"]:
        return None
    arguments = list(argv[1:])
    recipe = next(
        (
            index
            for index, arg in enumerate(arguments)
            if arg.endswith(".py") and (index == 0 or arguments[index - 1] != "--config")
        ),
        None,
    )
    if recipe is None or arguments[recipe].startswith("-"):
        return None
    module = arguments[recipe][: -len(".py")].replace("/", ".")
    options = _endpoint_as_master(arguments[:recipe])
    return [*options, "-m", module, *arguments[recipe + 1 :]]


def main(argv: Sequence[str] | None = None) -> None:
    """Exec what ``tune ARGV`` runs."""
    args = list(sys.argv[1:] if argv is None else argv)
    launch = torchrun_arguments(args)
    if launch is None:
        os.execv(sys.executable, [sys.executable, "-m", "torchtune._cli.tune", *args])
    elif launch[0] == "-m":  # no torchrun option: one process, as tune runs it in itself
        os.execv(sys.executable, [sys.executable, "-u", *launch])
    else:
        torchrun_shim.main(launch)


if __name__ == "__main__":
    main()
