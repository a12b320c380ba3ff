"""CacheDataset against a real cache: exact shards, resume, epochs, tensors, bad input."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest
import torch
from torch.utils.data import DataLoader
from trainer_data_cache import (
    CacheDataset,
    DatasetNotFoundError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidStateError,
    NullValueError,
    UnknownColumnError,
)

# DataLoader workers start from a forkserver, not by forking this process: other tests run Flight
# servers and clients in it, so workers forked from it may refuse to read (UnsafeForkError, see
# test_forks.py). The forkserver is a fresh process that has never opened a connection.
multiprocessing.set_forkserver_preload(["torch", "trainer_data_cache"])
WORKERS_CONTEXT = multiprocessing.get_context("forkserver")

Push = Callable[[str, str, pa.Table], None]
ROWS = 1001  # odd, and not a multiple of any batch size or world size used here
BATCH = 16


@pytest.fixture(scope="module")
def endpoint(remote_cache: str, push: Push, table_of: Callable[[int], pa.Table]) -> str:
    push(remote_cache, "rows", table_of(ROWS))
    return remote_cache


def read_rank(dataset: CacheDataset, workers: int) -> list[list[int]]:
    """The id column of every batch one rank yields through a DataLoader."""
    loader = DataLoader(
        dataset,
        batch_size=None,
        num_workers=workers,
        multiprocessing_context=WORKERS_CONTEXT if workers else None,
    )
    return [batch["id"].tolist() for batch in loader]


def read_world(endpoint: str, world: int, workers: int, **options: object) -> list[list[list[int]]]:
    return [
        read_rank(
            CacheDataset(
                endpoint, "rows", rank=rank, world_size=world, batch_rows=BATCH, **options
            ),
            workers,
        )  # type: ignore[arg-type]
        for rank in range(world)
    ]


@pytest.mark.parametrize("workers", [0, 2], ids=["no-workers", "two-workers"])
@pytest.mark.parametrize("world", [2, 3], ids=["two-ranks", "three-ranks"])
@pytest.mark.parametrize("shuffle", [False, True], ids=["ordered", "shuffled"])
def test_every_row_is_read_exactly_once(
    endpoint: str, world: int, workers: int, shuffle: bool
) -> None:
    ranks = read_world(endpoint, world, workers, shuffle=shuffle, seed=7)
    ids = [row for batches in ranks for batch in batches for row in batch]
    assert sorted(ids) == list(range(ROWS))
    sizes = [len(batch) for batches in ranks for batch in batches]
    assert sizes.count(BATCH) == ROWS // BATCH and sorted(sizes)[0] == ROWS % BATCH
    counts = [len(batches) for batches in ranks]
    assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize("workers", [0, 2], ids=["no-workers", "two-workers"])
@pytest.mark.parametrize("world", [2, 3], ids=["two-ranks", "three-ranks"])
def test_even_drop_gives_every_rank_the_same_batches_without_repeats(
    endpoint: str, world: int, workers: int
) -> None:
    ranks = read_world(endpoint, world, workers, even="drop", shuffle=True)
    ids = [row for batches in ranks for batch in batches for row in batch]
    assert len(ids) == len(set(ids))
    assert ROWS - len(ids) < world * BATCH
    assert len({len(batches) for batches in ranks}) == 1


@pytest.mark.parametrize("workers", [0, 2], ids=["no-workers", "two-workers"])
@pytest.mark.parametrize("world", [2, 3], ids=["two-ranks", "three-ranks"])
def test_even_pad_gives_every_rank_the_same_batches_covering_every_row(
    endpoint: str, world: int, workers: int
) -> None:
    ranks = read_world(endpoint, world, workers, even="pad")
    ids = [row for batches in ranks for batch in batches for row in batch]
    assert set(ids) == set(range(ROWS))
    assert len(ids) - ROWS < world * BATCH
    assert len({len(batches) for batches in ranks}) == 1


def test_set_epoch_reshuffles_the_same_way_on_every_rank(endpoint: str) -> None:
    def order(epoch: int, rank: int) -> list[int]:
        dataset = CacheDataset(
            endpoint, "rows", rank=rank, world_size=2, batch_rows=BATCH, shuffle=True, seed=3
        )
        dataset.set_epoch(epoch)
        return [row for batch in read_rank(dataset, 0) for row in batch]

    first = order(1, 0) + order(1, 1)
    assert sorted(first) == list(range(ROWS))
    assert order(1, 0) + order(1, 1) == first
    assert order(2, 0) + order(2, 1) != first


def test_set_epoch_reaches_persistent_workers(endpoint: str) -> None:
    dataset = CacheDataset(endpoint, "rows", batch_rows=BATCH, shuffle=True, seed=3)
    loader = DataLoader(
        dataset,
        batch_size=None,
        num_workers=2,
        persistent_workers=True,
        multiprocessing_context=WORKERS_CONTEXT,
    )
    epochs = []
    for epoch in (0, 1):
        dataset.set_epoch(epoch)
        epochs.append([batch["id"].tolist() for batch in loader])
    reference = CacheDataset(endpoint, "rows", batch_rows=BATCH, shuffle=True, seed=3)
    reference.set_epoch(1)
    assert epochs[1] == read_rank(reference, 2)
    assert epochs[0] != epochs[1]


def test_state_dict_resumes_mid_epoch_exactly(endpoint: str) -> None:
    def fresh() -> CacheDataset:
        dataset = CacheDataset(
            endpoint, "rows", rank=1, world_size=2, batch_rows=BATCH, shuffle=True, seed=5
        )
        dataset.set_epoch(4)
        return dataset

    whole = read_rank(fresh(), 0)
    interrupted = fresh()
    stream: Iterator[dict[str, torch.Tensor]] = iter(interrupted)
    head = [next(stream)["id"].tolist() for _ in range(9)]
    state = interrupted.state_dict()
    resumed = CacheDataset(
        endpoint, "rows", rank=1, world_size=2, batch_rows=BATCH, shuffle=True, seed=5
    )
    resumed.load_state_dict(state)
    assert resumed.epoch == 4
    assert head + read_rank(resumed, 0) == whole


def test_loader_state_dict_resumes_a_dataloader_with_workers_exactly(endpoint: str) -> None:
    def fresh() -> CacheDataset:
        return CacheDataset(endpoint, "rows", rank=0, world_size=3, batch_rows=BATCH)

    whole = read_rank(fresh(), 2)
    consumed = 7
    state = fresh().loader_state_dict(consumed, num_workers=2)
    resumed = fresh()
    resumed.load_state_dict(state)
    assert whole[:consumed] + read_rank(resumed, 2) == whole


def test_batches_hold_tensors_without_copies_and_vectors_as_2d(endpoint: str) -> None:
    dataset = CacheDataset(endpoint, "rows", columns=["id", "vector"], batch_rows=100)
    batch = next(iter(dataset))
    assert set(batch) == {"id", "vector"}
    assert batch["id"].dtype == torch.int64 and batch["id"].shape == (100,)
    assert batch["vector"].shape == (100, 4) and batch["vector"].dtype == torch.float32
    assert batch["vector"][3].tolist() == [12.0, 13.0, 14.0, 15.0]
    assert batch["vector"].flatten()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_filter_and_projection_apply_at_read_time(endpoint: str) -> None:
    text = CacheDataset(
        endpoint, "rows", columns=["id"], filter="label = 3 AND id < 500", batch_rows=BATCH
    )
    structured = CacheDataset(
        endpoint,
        "rows",
        columns=["id"],
        batch_rows=BATCH,
        filter={
            "and": [
                {"column": "label", "op": "==", "value": 3},
                {"column": "id", "op": "<", "value": 500},
            ]
        },
    )
    expected = [i for i in range(500) if i % 7 == 3]
    for dataset in (text, structured):
        assert [row for batch in read_rank(dataset, 0) for row in batch] == expected


def test_rank_and_world_size_come_from_the_environment(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    from_env = CacheDataset(endpoint, "rows")
    assert (from_env.rank, from_env.world_size) == (2, 3)
    explicit = CacheDataset(endpoint, "rows", rank=0, world_size=1)
    assert (explicit.rank, explicit.world_size) == (0, 1)


def test_nulls_raise_unless_a_fill_value_is_given(remote_cache: str, push: Push) -> None:
    push(remote_cache, "holes", pa.table({"x": pa.array([1.0, None, 3.0])}))
    with pytest.raises(NullValueError, match=r"column 'x'.*fill_values"):
        next(iter(CacheDataset(remote_cache, "holes")))
    filled = next(iter(CacheDataset(remote_cache, "holes", fill_values={"x": -1.0})))
    assert filled["x"].tolist() == [1.0, -1.0, 3.0]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param(
            {"endpoint": "localhost:1"},
            InvalidArgumentError,
            "endpoint",
            id="endpoint-without-scheme",
        ),
        pytest.param({"batch_rows": 0}, InvalidArgumentError, "batch_rows", id="batch-rows-zero"),
        pytest.param({"even": "round"}, InvalidArgumentError, "even", id="even-unknown"),
        pytest.param(
            {"rank": 1}, InvalidArgumentError, "rank, world_size", id="rank-without-world"
        ),
        pytest.param(
            {"rank": 3, "world_size": 3}, InvalidArgumentError, "rank", id="rank-too-large"
        ),
        pytest.param({"columns": "id"}, InvalidArgumentError, "columns", id="columns-as-string"),
        pytest.param({"filter": {"column": "id"}}, InvalidFilterError, "filter", id="filter-shape"),
    ],
)
def test_bad_arguments_are_named(
    endpoint: str, options: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments = {"endpoint": endpoint, "dataset": "rows", **options}
    with pytest.raises(error, match=message):
        CacheDataset(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param(
            {"dataset": "nope"}, DatasetNotFoundError, "'nope' is not loaded", id="unknown-dataset"
        ),
        pytest.param({"columns": ["id", "nope"]}, UnknownColumnError, "nope", id="unknown-column"),
        pytest.param(
            {"filter": "id >"},
            InvalidFilterError,
            "not a filter expression",
            id="malformed-text",
        ),
        pytest.param({"filter": "id + 1"}, InvalidFilterError, "boolean", id="non-boolean"),
        pytest.param(
            {"filter": "id IN (SELECT 1)"}, InvalidFilterError, "subqueries", id="subquery"
        ),
        pytest.param(
            {"filter": {"column": "nope", "op": "==", "value": 1}},
            InvalidFilterError,
            "unknown column",
            id="filter-unknown-column",
        ),
    ],
)
def test_bad_reads_fail_with_the_servers_reason(
    endpoint: str, options: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments = {"endpoint": endpoint, "dataset": "rows", **options}
    with pytest.raises(error, match=message):
        next(iter(CacheDataset(**arguments)))  # type: ignore[arg-type]


def test_columns_that_cannot_be_tensors_are_refused(remote_cache: str, push: Push) -> None:
    push(remote_cache, "words", pa.table({"word": ["a", "b"], "n": [1, 2]}))
    with pytest.raises(InvalidArgumentError, match=r"word \(string\)"):
        next(iter(CacheDataset(remote_cache, "words")))


def test_a_state_from_another_configuration_is_refused(endpoint: str) -> None:
    state = CacheDataset(endpoint, "rows", batch_rows=8).state_dict()
    with pytest.raises(InvalidStateError, match=r"state\.batch_rows: saved 8"):
        CacheDataset(endpoint, "rows", batch_rows=16).load_state_dict(state)


def test_duplicate_free_ids_hold_across_two_epochs(endpoint: str) -> None:
    dataset = CacheDataset(endpoint, "rows", batch_rows=BATCH, shuffle=True)
    totals = Counter()
    for epoch in (0, 1):
        dataset.set_epoch(epoch)
        totals.update(row for batch in read_rank(dataset, 0) for row in batch)
    assert set(totals.values()) == {2}


@pytest.mark.parametrize("workers", [0, 2], ids=["no-workers", "two-workers"])
def test_statefuldataloader_resumes_mid_epoch_exactly(endpoint: str, workers: int) -> None:
    stateful = pytest.importorskip("torchdata.stateful_dataloader", reason="needs torchdata")

    def loader() -> object:
        dataset = CacheDataset(
            endpoint, "rows", rank=1, world_size=2, batch_rows=BATCH, shuffle=True, seed=9
        )
        dataset.set_epoch(2)
        return stateful.StatefulDataLoader(
            dataset,
            batch_size=None,
            num_workers=workers,
            multiprocessing_context=WORKERS_CONTEXT if workers else None,
        )

    whole = [batch["id"].tolist() for batch in loader()]  # type: ignore[attr-defined]
    interrupted = loader()
    stream = iter(interrupted)  # type: ignore[call-overload]
    head = [next(stream)["id"].tolist() for _ in range(11)]
    state = interrupted.state_dict()  # type: ignore[attr-defined]
    resumed = loader()
    resumed.load_state_dict(state)  # type: ignore[attr-defined]
    assert head + [batch["id"].tolist() for batch in resumed] == whole  # type: ignore[attr-defined]


@pytest.mark.e2e  # spawned workers import torch afresh: tens of seconds on a busy machine
def test_spawned_workers_share_the_epoch_and_read_their_shares(endpoint: str) -> None:
    dataset = CacheDataset(endpoint, "rows", rank=0, world_size=2, batch_rows=BATCH, shuffle=True)
    dataset.set_epoch(3)
    loader = DataLoader(dataset, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    assert [batch["id"].tolist() for batch in loader] == read_rank(dataset, 2)
