"""Hostfiles: which host runs which ranks.

Rank order: hosts are written in the order given, one line each, and every implementation here
maps ranks by slot, so host ``hosts[i]`` runs ranks ``i * slots`` to ``i * slots + slots - 1``.
Rank 0 therefore runs on ``hosts[0]``: callers list the pod that must hold rank 0 first (the
controller lists the launcher first when it runs as a node, then the workers by pod index).

Formats: Open MPI writes ``host slots=N``; Intel MPI and MPICH (Hydra) write ``host:N``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple

from mpi_runtime._arguments import require_positive_int
from mpi_runtime.errors import InvalidArgumentError
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation

__all__ = ["MAX_SLOTS", "HostSlots", "hostfile", "parse_hostfile", "rank_hosts", "read_hostfile"]

MAX_SLOTS: Final = 65_536
"""Most slots one hostfile line may give a host (far above any machine's cores; one rank each)."""

_SLOTS: Final = re.compile(r"[0-9]{1,9}")


class HostSlots(NamedTuple):
    """One hostfile entry: a host and how many ranks it runs."""

    host: str
    slots: int


def _check_hosts(hosts: Sequence[str]) -> list[str]:
    if isinstance(hosts, str) or not isinstance(hosts, Sequence):
        raise InvalidArgumentError("hosts", f"expected a sequence of host names, got {hosts!r}")
    if not hosts:
        raise InvalidArgumentError("hosts", "expected at least one host, got none")
    seen: set[str] = set()
    for index, host in enumerate(hosts):
        if not isinstance(host, str) or not host or any(c.isspace() or c in ":#" for c in host):
            raise InvalidArgumentError(
                f"hosts[{index}]",
                f"expected a host name without spaces, ':' or '#', got {host!r}",
            )
        if host in seen:
            raise InvalidArgumentError(f"hosts[{index}]", f"host {host!r} is listed twice")
        seen.add(host)
    return list(hosts)


def hostfile(hosts: Sequence[str], slots: int, impl: ImplementationLike) -> str:
    """The hostfile for ``impl``: one line per host, in the given order (rank 0 on hosts[0])."""
    implementation = parse_implementation(impl)
    checked = _check_hosts(hosts)
    require_positive_int(slots, "slots")
    if implementation is Implementation.OPENMPI:
        lines = [f"{host} slots={slots}" for host in checked]
    else:
        lines = [f"{host}:{slots}" for host in checked]
    return "\n".join(lines) + "\n"


def read_hostfile(path: str | Path) -> str:
    """The text of the hostfile at ``path``; InvalidArgumentError when it is not UTF-8 text."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidArgumentError(
            "hostfile",
            f"{path} is not UTF-8 text: byte {data[error.start]:#04x} at offset {error.start}",
        ) from None


def parse_hostfile(text: str) -> list[HostSlots]:
    """The entries of a hostfile in either format, in file order (comments and blanks skipped).

    A host without a slot count has one slot, as both Open MPI and Hydra read it. A host name
    is printable ASCII; a slot count is 1 to ``MAX_SLOTS``.
    """
    entries: list[HostSlots] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        host, slots_text = fields[0], "1"
        if ":" in host:
            host, slots_text = host.rsplit(":", 1)
        for field in fields[1:]:
            key, _, value = field.partition("=")
            if key == "slots":
                slots_text = value
        if (
            not host
            or not host.isascii()
            or not host.isprintable()
            or not _SLOTS.fullmatch(slots_text)
            or not 1 <= int(slots_text) <= MAX_SLOTS
        ):
            raise InvalidArgumentError(
                f"hostfile line {number}",
                f"expected 'host slots=N' or 'host:N' with a printable ASCII host and "
                f"1 <= N <= {MAX_SLOTS}, got {raw!r}",
            )
        entries.append(HostSlots(host, int(slots_text)))
    return entries


def rank_hosts(entries: Sequence[HostSlots]) -> list[str]:
    """The host of each rank, index = rank, for by-slot mapping over ``entries`` in order."""
    return [
        entry.host
        for entry in entries
        for _ in range(require_positive_int(entry.slots, entry.host))
    ]
