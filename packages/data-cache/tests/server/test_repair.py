"""Placement repair: the plan, the back-off, and a head copying partitions back onto a node that
restarted empty at the same address (real Flight servers on loopback)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pytest
import torch
from data_cache_testing import ADMIN, AS_ADMIN
from trainer_data_cache import CacheDataset, HeadServer, InvalidArgumentError, NodeServer
from trainer_data_cache.server.repair import NodeHealth, Placed, Repair, holdings, plan_repairs

ROWS = 1000
INTERVAL = 0.05

WaitUntil = Callable[[Callable[[], bool], str], None]

A, B, C = "grpc://a:1", "grpc://b:1", "grpc://c:1"


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(
            {A: {("d", 0, 1): 8, ("d", 1, 1): 8}, B: {("d", 0, 1): 8, ("d", 1, 1): 8}},
            [],
            id="nothing-missing",
        ),
        pytest.param(
            {A: {}, B: {("d", 0, 1): 8, ("d", 1, 1): 9}},
            [Repair("d", 1, 0, 5, A, (B,), 8), Repair("d", 1, 1, 4, A, (B,), 9)],
            id="restarted-empty",
        ),
        pytest.param(
            {A: {("d", 0, 1): 8, ("d", 1, 1): 8}},
            [],
            id="a-node-that-did-not-answer-is-neither-target-nor-source",
        ),
        pytest.param(
            {A: {("d", 0, 0): 8, ("d", 1, 1): 8}, B: {}},
            [
                Repair("d", 1, 0, 5, A, (), 0),
                Repair("d", 1, 0, 5, B, (), 0),
                Repair("d", 1, 1, 4, B, (A,), 8),
            ],
            id="an-older-generation-counts-as-missing-and-lost-has-no-source",
        ),
    ],
)
def test_plan_repairs_lists_what_answering_nodes_lack(
    held: dict[str, dict[tuple[str, int, int], int]], expected: list[Repair]
) -> None:
    placed = [Placed("d", 1, 0, 5, (A, B)), Placed("d", 1, 1, 4, (B, A))]
    assert sorted(plan_repairs(placed, held), key=str) == sorted(expected, key=str)


def test_holdings_read_a_node_status() -> None:
    status = {"partitions": [{"dataset": "d", "partition": 2, "generation": 7, "bytes": 40}]}
    assert holdings(status) == {("d", 2, 7): 40}


@pytest.mark.parametrize(
    ("failures", "retry_in"),
    [
        pytest.param(1, 2.0, id="first-failure-waits-one-interval"),
        pytest.param(3, 8.0, id="doubling"),
        pytest.param(6, 16.0, id="capped-at-eight-intervals"),
    ],
)
def test_a_failing_node_is_asked_again_with_capped_back_off(failures: int, retry_in: float) -> None:
    now = [100.0]
    health = NodeHealth([A, B], 2.0, clock=lambda: now[0])
    for _ in range(failures):
        health.failed(A, "down")
    snapshot = health.snapshot()
    expected = {"failures": failures, "retry_in": retry_in, "error": "down", "repaired": 0}
    assert snapshot[A] == expected
    assert (health.due(A), health.due(B)) == (False, True)
    now[0] += retry_in
    assert health.due(A)
    health.succeeded(A, repaired=2)
    assert health.snapshot()[A] == {"failures": 0, "retry_in": 0.0, "error": None, "repaired": 2}


@pytest.mark.parametrize("interval", [0, -1.0], ids=["zero", "negative"])
def test_a_repair_interval_must_be_positive(interval: float) -> None:
    with pytest.raises(InvalidArgumentError, match="repair_interval"):
        HeadServer(["grpc://127.0.0.1:1"], repair_interval=interval)


class Cluster:
    """Nodes and a head in this process; a node can be stopped and started again empty."""

    def __init__(
        self, num_nodes: int, replicas: int, repair_interval: float | None = INTERVAL
    ) -> None:
        self.nodes = [NodeServer(security=ADMIN) for _ in range(num_nodes)]
        self.head = HeadServer(
            [node.location for node in self.nodes],
            replicas=replicas,
            repair_interval=repair_interval,
            connect=AS_ADMIN,
        )
        self.head.load_table("d", pa.table({"id": np.arange(ROWS)}))

    def stop(self, index: int) -> None:
        self.nodes[index].shutdown()

    def restart(self, index: int, memory_limit: int = 1 << 30) -> None:
        """Stop node ``index`` and start a fresh, empty one on the same port."""
        port = self.nodes[index].port
        self.stop(index)
        self.nodes[index] = None  # type: ignore[call-overload]
        gc.collect()  # let go of the old server before binding its port again
        self.nodes[index] = NodeServer(port=port, memory_limit=memory_limit, security=ADMIN)

    def close(self) -> None:
        self.head.shutdown()
        for node in self.nodes:
            node.shutdown()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    cluster = Cluster(2, replicas=2)
    try:
        yield cluster
    finally:
        cluster.close()


def read_ids(endpoint: str, **options: object) -> torch.Tensor:
    dataset = CacheDataset(endpoint, "d", batch_rows=128, **options)  # type: ignore[arg-type]
    return torch.cat([batch["id"] for batch in dataset])


def test_a_restarted_node_gets_its_partitions_back_and_serves_them_alone(
    cluster: Cluster, wait_until: WaitUntil
) -> None:
    location = cluster.nodes[0].location
    cluster.restart(0)
    assert cluster.nodes[0].location == location
    wait_until(
        lambda: cluster.head.status()["repair"]["nodes"][location]["repaired"] == 2,  # type: ignore[index]
        "the head copied both partitions back onto the restarted node",
    )
    repair = cluster.head.status()["repair"]
    assert (repair["complete"], repair["missing"], repair["repaired"]) == (True, [], 2)  # type: ignore[index]
    assert cluster.head.reconcile() == 0  # idempotent: nothing left to copy
    assert cluster.nodes[0].metrics.snapshot()["rows_served"] == 0
    cluster.stop(1)  # its replica partner: every row must now come from the restarted node
    assert torch.equal(read_ids(cluster.head.location), torch.arange(ROWS))
    assert cluster.nodes[0].metrics.snapshot()["rows_served"] == ROWS


def test_a_node_that_stays_down_is_retried_with_back_off_and_reads_fail_over(
    cluster: Cluster, wait_until: WaitUntil
) -> None:
    location = cluster.nodes[1].location
    cluster.stop(1)
    wait_until(
        lambda: cluster.head.status()["repair"]["nodes"][location]["failures"] >= 3,  # type: ignore[index]
        "the head retried the stopped node three times",
    )
    status = cluster.head.status()
    node = status["repair"]["nodes"][location]  # type: ignore[index]
    assert node["error"] and location in node["error"]
    assert 0 < node["retry_in"] <= 8 * INTERVAL
    assert (status["ready"], status["repair"]["complete"]) == (False, False)  # type: ignore[index]
    assert torch.equal(read_ids(cluster.head.location), torch.arange(ROWS))


def test_a_copy_over_the_restarted_nodes_budget_is_refused_and_retried_with_back_off(
    cluster: Cluster, wait_until: WaitUntil
) -> None:
    location = cluster.nodes[0].location
    cluster.restart(0, memory_limit=ROWS * 4)  # room for one partition (500 int64 rows)
    wait_until(
        lambda: cluster.head.status()["repair"]["nodes"][location]["failures"] >= 2,  # type: ignore[index]
        "the head retried the copy that does not fit",
    )
    repair = cluster.head.status()["repair"]
    assert "memory budget" in repair["nodes"][location]["error"]  # type: ignore[index]
    assert cluster.nodes[0].budget.usage().used == ROWS * 4
    assert [part["partition"] for part in repair["missing"]] == [1]  # type: ignore[index]


def test_a_partition_without_a_surviving_copy_is_reported_lost() -> None:
    cluster = Cluster(2, replicas=1)
    try:
        location = cluster.nodes[0].location
        cluster.restart(0)
        assert cluster.head.reconcile() == 0
        repair = cluster.head.status()["repair"]
        assert repair["complete"] is False  # type: ignore[index]
        assert repair["missing"] == [  # type: ignore[index]
            {"dataset": "d", "generation": 1, "partition": 0, "location": location, "sources": []}
        ]
    finally:
        cluster.close()


def test_before_repair_a_filtered_read_counts_and_reads_on_the_replica() -> None:
    cluster = Cluster(2, replicas=2, repair_interval=None)
    try:
        cluster.restart(0)  # empty, and nothing repairs it
        ids = read_ids(cluster.head.location, filter="id % 3 = 0")
        assert torch.equal(ids, torch.arange(0, ROWS, 3))
    finally:
        cluster.close()
