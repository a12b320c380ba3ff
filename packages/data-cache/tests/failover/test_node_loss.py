"""Killing a node mid-stream: the reader fails over to the replica with no duplicate, no gap."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from click.testing import CliRunner
from trainer_data_cache import CacheDataset
from trainer_data_cache.cli import main

ROWS = 2_000_000  # 32 MB: far more than gRPC buffers, so the stream is live when the node dies


@pytest.mark.e2e
def test_killing_the_serving_node_mid_stream_loses_and_repeats_nothing(
    child_process: Callable[..., object], tmp_path: Path
) -> None:
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": np.arange(ROWS), "value": np.ones(ROWS)}), path)
    nodes = [child_process(["node"]) for _ in range(2)]
    locations = [node.endpoint for node in nodes]  # type: ignore[attr-defined]
    head = child_process(
        ["head", str(path), "--replicas", "2", *[f"--node={location}" for location in locations]]
    )
    endpoint = head.endpoint  # type: ignore[attr-defined]
    assert CliRunner().invoke(main, ["probe", endpoint]).exit_code == 0

    dataset = CacheDataset(endpoint, "big", batch_rows=10_000)
    ids = []
    for index, batch in enumerate(dataset):
        ids.append(batch["id"])
        if index == 3:
            nodes[0].kill()  # type: ignore[attr-defined]  # partition 0's first location
    assert torch.equal(torch.cat(ids), torch.arange(ROWS))
    assert dataset.retries >= 1
