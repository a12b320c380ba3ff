"""Killing a node mid-stream: the reader fails over to the replica with no duplicate, no gap."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pytest
import torch
from data_cache import CacheDataset, HeadServer

ROWS = 2_000_000  # 32 MB: far more than gRPC buffers, so the stream is live when the node dies


@pytest.fixture
def two_node_processes(child_process: Callable[..., object]) -> Iterator[list[object]]:
    yield [child_process(["node"]) for _ in range(2)]


@pytest.mark.e2e
def test_killing_the_serving_node_mid_stream_loses_and_repeats_nothing(
    two_node_processes: list[object],
) -> None:
    nodes = two_node_processes
    locations = [node.endpoint for node in nodes]  # type: ignore[attr-defined]
    table = pa.table({"id": np.arange(ROWS), "value": np.ones(ROWS)})
    with HeadServer(locations, replicas=2) as head:
        summary = head.load_table("big", table)
        assert summary["partitions"][0]["locations"] == locations
        dataset = CacheDataset(head.location, "big", batch_rows=10_000)
        ids = []
        for index, batch in enumerate(dataset):
            ids.append(batch["id"])
            if index == 3:
                nodes[0].kill()  # type: ignore[attr-defined]  # the primary of partition 0
        seen = torch.cat(ids)
    assert torch.equal(seen, torch.arange(ROWS))
    assert dataset.retries >= 1
