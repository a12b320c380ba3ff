"""What went wrong in a failed step, read from its log (pure).

A torchrun node's log holds each rank's traceback, prefixed ``[rankN]: `` by torch, followed by
torchrun's own ``ChildFailedError`` traceback and banner, whose "Root Cause" names the rank that
failed first. The user's exception is the last line of that rank's traceback; a log without rank
prefixes (plain ``python``, MPI ranks) gives the last traceback that is not torchrun's. Without
torchrun's banner, the rank whose lines came first is taken as the one that failed first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FailureSummary", "summarize"]

TRACEBACK_START = "Traceback (most recent call last):"
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?(.*)$")
_ROOT_CAUSE = "Root Cause (first observed failure):"
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning|Failure)?(:|$)")
_LAUNCHER_ERRORS = ("torch.distributed.elastic.", "ChildFailedError")
MAX_TRACEBACK_LINES = 30


@dataclass(frozen=True)
class FailureSummary:
    """The user's exception (``ValueError: bad lr``), the rank that raised it if known, and its
    traceback (at most ``MAX_TRACEBACK_LINES`` lines, the last ones)."""

    exception: str
    rank: int | None
    traceback: tuple[str, ...]


def _tracebacks(lines: Sequence[str]) -> list[list[str]]:
    """Each ``Traceback (most recent call last):`` block up to and including its exception line."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        if line.startswith(TRACEBACK_START):
            current = [line]
            blocks.append(current)
        elif current is not None:
            current.append(line)
            if not line.startswith(" ") and _EXCEPTION.match(line):
                current = None
    return [block for block in blocks if len(block) > 1 and not block[-1].startswith(" ")]


def _root_cause_rank(lines: Sequence[str]) -> int | None:
    """The rank torchrun's banner names as the first observed failure."""
    try:
        start = max(index for index, line in enumerate(lines) if line.strip() == _ROOT_CAUSE)
    except ValueError:
        return None
    for line in lines[start + 1 :]:
        if match := _ROOT_RANK.match(line):
            return int(match.group(1))
    return None


def _summary(block: list[str], rank: int | None) -> FailureSummary:
    return FailureSummary(block[-1], rank, tuple(block[-MAX_TRACEBACK_LINES:]))


def summarize(lines: Sequence[str]) -> FailureSummary | None:
    """The user's exception in a failed step's log, or None when the log holds no traceback."""
    by_rank: dict[int, list[str]] = {}  # in the order each rank's first line appears
    for line in lines:
        if match := _RANK_PREFIX.match(line):
            by_rank.setdefault(int(match.group(1)), []).append(match.group(2))
    ranked = {rank: blocks[-1] for rank, own in by_rank.items() if (blocks := _tracebacks(own))}
    if ranked:
        root = _root_cause_rank(lines)
        rank = root if root in ranked else next(iter(ranked))  # else the first to print one
        return _summary(ranked[rank], rank)
    own = [
        block
        for block in _tracebacks([line for line in lines if not _RANK_PREFIX.match(line)])
        if not any(marker in block[-1] for marker in _LAUNCHER_ERRORS)
    ]
    if own:
        return _summary(own[-1], _root_cause_rank(lines))
    return None
