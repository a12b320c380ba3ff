"""A reconcile reading through the informer cache against the stand-in: a settled TrainJob costs no
GET and no write; without the cache each pass reads every object again."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from trainer_controller.operator import load_credentials
from trainer_controller.operator.apiclient import KubeClient
from trainer_controller.operator.events import EventRecorder
from trainer_controller.operator.informer import ObjectCache
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.operator.reconcile import Reconciler

pytestmark = pytest.mark.e2e


def totals(counter: Counter[str] | dict[object, int]) -> int:
    return sum(counter.values())


@pytest.mark.parametrize("cached", [pytest.param(True, id="cache"), pytest.param(False, id="api")])
def test_second_pass_over_a_settled_trainjob(cluster, cached: bool) -> None:  # type: ignore[no-untyped-def]
    cluster.create(
        cluster.trainjobs,
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job"},
            "spec": {"runtimeRef": {"name": "deepspeed-distributed"}},
        },
    )
    metrics = OperatorMetrics()

    def hits() -> float:
        return (
            metrics.registry.get_sample_value("trainer_reconcile_reads_total", {"source": "cache"})
            or 0.0
        )

    async def two_passes() -> tuple[int, float, int]:
        async with KubeClient(load_credentials(str(cluster.kubeconfig))) as client:
            cache = ObjectCache() if cached else None
            reconciler = Reconciler(client, EventRecorder(client), metrics, cache=cache)
            await reconciler.reconcile("default", "job")
            reads, writes = totals(cluster.server.reads), totals(cluster.server.store.writes)
            cached_reads = hits()
            await reconciler.reconcile("default", "job")
            return (
                totals(cluster.server.reads) - reads,
                hits() - cached_reads,
                totals(cluster.server.store.writes) - writes,
            )

    gets, from_cache, writes = asyncio.run(two_passes())
    assert writes == 0
    # The TrainJob, its runtime and its JobSet (a created JobSet's other objects are not read).
    assert (gets, from_cache) == ((0, 3) if cached else (3, 0))
