"""Contiguous row ranges: how a dataset's rows are split over nodes and cut into pieces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainer_data_cache.errors import InvalidArgumentError

__all__ = ["RowRange", "overlapping", "shard_range", "split_rows"]


@dataclass(frozen=True)
class RowRange:
    """Rows ``start`` (inclusive) to ``stop`` (exclusive) of a global row order."""

    start: int
    stop: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.stop:
            raise InvalidArgumentError(f"row range: need 0 <= start <= stop, got {self}")

    def __len__(self) -> int:
        return self.stop - self.start


def shard_range(total: int, parts: int, index: int) -> RowRange:
    """Range ``index`` of ``split_rows(total, parts)``, computed alone: constant time and memory
    however large ``parts`` is."""
    _check_split(total, parts)
    if not 0 <= index < parts:
        raise InvalidArgumentError(f"index: expected 0 <= index < parts={parts}, got {index}")
    base, extra = divmod(total, parts)
    start = index * base + min(index, extra)
    return RowRange(start, start + base + (1 if index < extra else 0))


def split_rows(total: int, parts: int) -> list[RowRange]:
    """``total`` rows as ``parts`` contiguous ranges whose sizes differ by at most one (one
    entry per part: for a few parts, such as nodes; see ``shard_range`` for one of many)."""
    _check_split(total, parts)
    return [shard_range(total, parts, index) for index in range(parts)]


def _check_split(total: int, parts: int) -> None:
    if parts < 1:
        raise InvalidArgumentError(f"parts: expected at least 1, got {parts}")
    if total < 0:
        raise InvalidArgumentError(f"total: expected a row count >= 0, got {total}")


def overlapping(ranges: Sequence[RowRange], wanted: RowRange) -> list[tuple[int, RowRange]]:
    """For each of ``ranges`` that meets ``wanted``: its index and the shared rows."""
    shared = []
    for index, part in enumerate(ranges):
        start, stop = max(part.start, wanted.start), min(part.stop, wanted.stop)
        if start < stop:
            shared.append((index, RowRange(start, stop)))
    return shared
