"""A dataset keeps its Flight connections between iterations, and closes them when asked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from data_cache_testing import ADMIN
from trainer_data_cache import CacheDataset, LocalCache, forks

ROWS = 300


@pytest.fixture
def cache() -> Iterator[LocalCache]:
    """A head and two nodes in this process that take pushed tables."""
    with LocalCache(2, security=ADMIN) as local:
        yield local


def record_peers(server: Any, call: str, peers: list[str]) -> None:
    """Wrap ``server``'s ``call`` so each one records the connection (peer address) it came on."""
    original = getattr(server, call)

    def recording(context: Any, *args: Any) -> Any:
        peers.append(context.peer())
        return original(context, *args)

    setattr(server, call, recording)


def test_a_second_iteration_opens_no_new_connection(
    cache: LocalCache, push: Callable[[str, str, pa.Table], None], table_of: Any
) -> None:
    push(cache.endpoint, "reused", table_of(ROWS))
    head_peers: list[str] = []
    node_peers: list[str] = []
    record_peers(cache.head, "get_flight_info", head_peers)
    for node in cache.nodes:
        record_peers(node, "do_get", node_peers)
    dataset = CacheDataset(cache.endpoint, "reused", batch_rows=64)
    for _ in range(3):
        ids = [row for batch in dataset for row in batch["id"].tolist()]
        assert ids == list(range(ROWS))
    assert len(head_peers) == 3 and len(set(head_peers)) == 1
    assert len(node_peers) >= 3 and len(set(node_peers)) <= len(cache.nodes)
    assert f"client of {cache.endpoint}" in forks.held()  # kept between iterations
    with dataset:  # the end of a with block closes them
        pass
    assert f"client of {cache.endpoint}" not in forks.held()


def test_close_then_iterate_reconnects(
    cache: LocalCache, push: Callable[[str, str, pa.Table], None], table_of: Any
) -> None:
    push(cache.endpoint, "reopened", table_of(ROWS))
    head_peers: list[str] = []
    record_peers(cache.head, "get_flight_info", head_peers)
    dataset = CacheDataset(cache.endpoint, "reopened", batch_rows=64)
    assert sum(len(batch["id"]) for batch in dataset) == ROWS
    dataset.close()
    assert sum(len(batch["id"]) for batch in dataset) == ROWS
    dataset.close()
    assert len(set(head_peers)) == 2
