"""Contiguous row ranges: how a dataset's rows are split over nodes and cut into pieces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainer_data_cache.errors import InvalidArgumentError

__all__ = ["RowRange", "overlapping", "split_rows"]


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


def split_rows(total: int, parts: int) -> list[RowRange]:
    """``total`` rows as ``parts`` contiguous ranges whose sizes differ by at most one."""
    if parts < 1:
        raise InvalidArgumentError(f"parts: expected at least 1, got {parts}")
    if total < 0:
        raise InvalidArgumentError(f"total: expected a row count >= 0, got {total}")
    base, extra = divmod(total, parts)
    ranges, start = [], 0
    for index in range(parts):
        stop = start + base + (1 if index < extra else 0)
        ranges.append(RowRange(start, stop))
        start = stop
    return ranges


def overlapping(ranges: Sequence[RowRange], wanted: RowRange) -> list[tuple[int, RowRange]]:
    """For each of ``ranges`` that meets ``wanted``: its index and the shared rows."""
    shared = []
    for index, part in enumerate(ranges):
        start, stop = max(part.start, wanted.start), min(part.stop, wanted.stop)
        if start < stop:
            shared.append((index, RowRange(start, stop)))
    return shared
