"""Killing a node process and starting a fresh one at the same address: the head copies its
partitions back, and the restarted node alone then serves every row exactly once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest
import torch
from trainer_data_cache import CacheDataset

ROWS = 500_000  # 4 MB: more than gRPC buffers, so the early read is still live


def head_status(endpoint: str) -> dict[str, Any]:
    client = flight.FlightClient(endpoint)
    try:
        results = list(client.do_action(flight.Action("status", b""), flight.FlightCallOptions(5)))
    finally:
        client.close()
    status: dict[str, Any] = json.loads(results[0].body.to_pybytes())
    return status


@pytest.mark.e2e
def test_a_restarted_node_process_is_repaired_and_serves_without_its_partner(
    child_process: Callable[..., Any],
    wait_until: Callable[[Callable[[], bool], str], None],
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": np.arange(ROWS)}), path)
    nodes = [child_process(["node"]) for _ in range(2)]
    location = nodes[0].endpoint
    head = child_process(
        [
            "head",
            str(path),
            "--replicas",
            "2",
            "--repair-interval",
            "0.2",
            *[f"--node={node.endpoint}" for node in nodes],
        ]
    )
    wait_until(lambda: head_status(head.endpoint)["ready"], "the head has placed the data")
    dataset = CacheDataset(head.endpoint, "rows", batch_rows=4096)
    early = iter(dataset)  # a read in flight across the restart, the repair and the partner's loss
    ids = [next(early)["id"]]

    nodes[0].kill()
    restarted = child_process(["node", "--port", str(urlsplit(location).port)])
    assert restarted.endpoint == location
    wait_until(
        lambda: head_status(head.endpoint)["repair"]["complete"],
        "the head copied the partitions back onto the restarted node",
    )
    status = head_status(head.endpoint)
    assert status["repair"]["nodes"][location]["repaired"] == 2
    assert all(len(node["partitions"]) == 2 for node in status["nodes"])

    nodes[1].kill()  # the restarted node's replica partner: every row must come from it now
    assert torch.equal(torch.cat([*ids, *(batch["id"] for batch in early)]), torch.arange(ROWS))
    assert torch.equal(torch.cat([batch["id"] for batch in dataset]), torch.arange(ROWS))
    status = head_status(head.endpoint)  # the head keeps answering with a node down
    (down,) = [node for node in status["nodes"] if node["location"] == nodes[1].endpoint]
    assert "error" in down
    assert (status["ready"], status["repair"]["complete"]) == (False, False)
