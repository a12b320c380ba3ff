"""The shard plan on its own: exactly once, even modes, shuffles, and bad consumers."""

from __future__ import annotations

from collections import Counter

import pytest
from trainer_data_cache import Consumer, InvalidArgumentError, plan_batches
from trainer_data_cache.client.sharding import merge_ranges
from trainer_data_cache.partitions import RowRange


def rows_by_rank(
    total: int, batch: int, world: int, workers: int, **options: object
) -> list[list[RowRange]]:
    return [
        [
            part
            for worker in range(workers)
            for part in plan_batches(
                total, batch, Consumer(rank, world, worker, workers), **options
            )
        ]  # type: ignore[arg-type]
        for rank in range(world)
    ]


def counts(ranks: list[list[RowRange]]) -> Counter[int]:
    return Counter(row for parts in ranks for part in parts for row in range(part.start, part.stop))


@pytest.mark.parametrize("total", [0, 1, 7, 101, 1000])
@pytest.mark.parametrize("world", [1, 2, 3, 5])
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_row_belongs_to_exactly_one_consumer(
    total: int, world: int, workers: int, shuffle: bool
) -> None:
    ranks = rows_by_rank(total, 8, world, workers, shuffle=shuffle, seed=1, epoch=2)
    assert counts(ranks) == Counter(range(total))
    assert all(len(part) == 8 for parts in ranks for part in parts if part.stop != total)


@pytest.mark.parametrize("total", [1, 7, 101, 1000])
@pytest.mark.parametrize("world", [2, 3, 5])
def test_even_modes_equalise_batches_per_rank(total: int, world: int) -> None:
    dropped = rows_by_rank(total, 8, world, 2, even="drop", shuffle=True)
    assert len({len(parts) for parts in dropped}) == 1
    assert set(counts(dropped).values()) <= {1}
    padded = rows_by_rank(total, 8, world, 2, even="pad")
    assert len({len(parts) for parts in padded}) == 1
    assert set(counts(padded)) == set(range(total))


def test_shuffles_depend_on_seed_and_epoch_only() -> None:
    def plan(seed: int, epoch: int) -> list[RowRange]:
        return plan_batches(1000, 10, Consumer(1, 2), shuffle=True, seed=seed, epoch=epoch)

    assert plan(1, 1) == plan(1, 1)
    assert plan(1, 1) != plan(1, 2) and plan(1, 1) != plan(2, 1)
    assert plan_batches(1000, 10, Consumer(1, 2)) == [
        RowRange(s, s + 10) for s in range(500, 1000, 10)
    ]


def test_merge_joins_adjacent_ranges_only() -> None:
    ranges = [RowRange(0, 2), RowRange(2, 4), RowRange(8, 9), RowRange(4, 5)]
    assert merge_ranges(ranges) == [RowRange(0, 4), RowRange(8, 9), RowRange(4, 5)]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"rank": 2, "world_size": 2}, "rank", id="rank-out-of-range"),
        pytest.param({"world_size": 0}, "world_size", id="no-world"),
        pytest.param({"worker": 1, "num_workers": 1}, "worker", id="worker-out-of-range"),
    ],
)
def test_bad_consumers_are_named(arguments: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        Consumer(**arguments)


def test_bad_plan_arguments_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match="batch_rows"):
        plan_batches(10, 0, Consumer())
    with pytest.raises(InvalidArgumentError, match="even"):
        plan_batches(10, 1, Consumer(), even="some")  # type: ignore[arg-type]
