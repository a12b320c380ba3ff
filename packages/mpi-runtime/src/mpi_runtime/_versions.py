"""The installed version, read only when asked: reading package metadata costs ``mpi-launch``
tens of milliseconds at every start, more than the rest of its imports."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["VersionAction", "package_version"]


def package_version() -> str:
    """The version of the installed ``mpi-runtime`` distribution."""
    from importlib.metadata import version

    return version("mpi-runtime")


class VersionAction(argparse.Action):
    """``--version``: print ``<prog> <version>`` and exit, reading the version only then."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()
