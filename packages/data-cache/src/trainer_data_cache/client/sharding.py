"""Which rows each consumer (rank x DataLoader worker) reads, as a pure function.

The global row order is cut into blocks of ``batch_rows`` rows; one block is one batch. With
``shuffle`` the full blocks are permuted by ``(seed, epoch)``, the same on every rank; a shorter
last block stays last. ``even`` makes the block count a multiple of the world size, by dropping
the last blocks (``"drop"``) or repeating the first ones (``"pad"``). Each rank takes a contiguous
run of the blocks, and each of its workers a contiguous run of those, so every block goes to
exactly one consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from trainer_data_cache.errors import InvalidArgumentError
from trainer_data_cache.partitions import RowRange, shard_range

__all__ = ["Consumer", "Even", "merge_ranges", "plan_batches"]

Even: TypeAlias = Literal["drop", "pad"] | None


@dataclass(frozen=True)
class Consumer:
    """One reader of the data: ``worker`` of ``num_workers`` DataLoader workers of ``rank``."""

    rank: int = 0
    world_size: int = 1
    worker: int = 0
    num_workers: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise InvalidArgumentError(f"world_size: expected at least 1, got {self.world_size}")
        if not 0 <= self.rank < self.world_size:
            raise InvalidArgumentError(
                f"rank: expected 0 <= rank < world_size={self.world_size}, got {self.rank}"
            )
        if self.num_workers < 1 or not 0 <= self.worker < self.num_workers:
            raise InvalidArgumentError(
                f"worker: expected 0 <= worker < num_workers={self.num_workers}, got {self.worker}"
            )


def plan_batches(
    total_rows: int,
    batch_rows: int,
    consumer: Consumer,
    *,
    shuffle: bool = False,
    seed: int = 0,
    epoch: int = 0,
    even: Even = None,
) -> list[RowRange]:
    """The batches ``consumer`` yields this epoch, in order, each as a range of global rows."""
    if batch_rows < 1:
        raise InvalidArgumentError(f"batch_rows: expected at least 1, got {batch_rows}")
    if even not in (None, "drop", "pad"):
        raise InvalidArgumentError(f"even: expected 'drop', 'pad' or None, got {even!r}")
    full, rest = divmod(total_rows, batch_rows)
    order = list(range(full))
    if shuffle:
        order = np.random.default_rng([seed, epoch]).permutation(full).tolist()
    blocks = [RowRange(index * batch_rows, (index + 1) * batch_rows) for index in order]
    if rest:
        blocks.append(RowRange(full * batch_rows, total_rows))
    world = consumer.world_size
    if even == "drop":
        blocks = blocks[: len(blocks) - len(blocks) % world]
    elif even == "pad" and blocks:
        missing = -len(blocks) % world
        blocks = blocks + [blocks[index % len(blocks)] for index in range(missing)]
    mine = shard_range(len(blocks), world, consumer.rank)
    rank_blocks = blocks[mine.start : mine.stop]
    share = shard_range(len(rank_blocks), consumer.num_workers, consumer.worker)
    return rank_blocks[share.start : share.stop]


def merge_ranges(ranges: list[RowRange]) -> list[RowRange]:
    """Adjacent ranges joined, so consecutive blocks are read in one stream."""
    merged: list[RowRange] = []
    for part in ranges:
        if merged and merged[-1].stop == part.start:
            merged[-1] = RowRange(merged[-1].start, part.stop)
        else:
            merged.append(part)
    return merged
