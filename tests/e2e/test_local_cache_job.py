"""Across packages: a TrainJob on the cache runtime reads its data through the job's data cache.

The local backend runs the controller's plan: the cache StatefulSets as one ``data-cache serve``
process, the dataset-initializer step's probe, then two torchrun nodes reading ``CacheDataset``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from trainer_sdk.cli import cli

pytestmark = pytest.mark.e2e
ROWS = 101  # odd, so the ranks' shares differ

TRAIN = """
import json
import torch.distributed as dist
from trainer_data_cache import CacheDataset

dist.init_process_group("gloo")
dataset = CacheDataset.from_env(batch_rows=8)
ids = [int(value) for batch in dataset for value in batch["id"].tolist()]
print("ROWS", dist.get_rank(), json.dumps(ids), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


def test_two_nodes_read_every_row_exactly_once_through_the_cache(tmp_path: Path) -> None:
    data = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(ROWS), pa.int64())}), data)
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": "cached-rows"},
                "spec": {
                    "runtimeRef": {"name": "torch-distributed-with-cache"},
                    "trainer": {"numNodes": 2, "command": ["torchrun", str(script)]},
                    "initializer": {
                        "dataset": {
                            "storageUri": "cache://local/rows",
                            "env": [
                                {"name": "METADATA_LOC", "value": str(data)},
                                {"name": "CLUSTER_SIZE", "value": "3"},
                            ],
                        }
                    },
                },
            }
        )
    )
    result = CliRunner().invoke(
        cli,
        ["--backend", "local", "--root", str(tmp_path / "jobs"), "run", "-f", str(manifest)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shares = {
        int(rank): json.loads(ids)
        for rank, ids in re.findall(r"ROWS (\d) (\[[\d, ]*\])", result.stdout)
    }
    assert sorted(shares) == [0, 1]
    assert all(shares.values()), shares
    assert sorted(shares[0] + shares[1]) == list(range(ROWS))
    step_order = [line.split("]")[0] for line in result.stdout.splitlines() if line.startswith("[")]
    assert step_order.index("[dataset-initializer") < step_order.index("[node-0")
