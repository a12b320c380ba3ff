"""One reconcile admits and builds once: ``admit`` and ``build`` counted per pass against the
stand-in, for a new job that gets its objects (with and without the informer cache) and for the
passes after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from trainer_controller.operator import load_credentials, reconcile
from trainer_controller.operator.apiclient import KubeClient
from trainer_controller.operator.events import EventRecorder
from trainer_controller.operator.informer import ObjectCache
from trainer_controller.operator.metrics import OperatorMetrics

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("runtime", ["torch-distributed", "deepspeed-distributed"])
@pytest.mark.parametrize("cached", [pytest.param(True, id="cache"), pytest.param(False, id="api")])
def test_each_pass_admits_and_builds_once(  # type: ignore[no-untyped-def]
    cluster, monkeypatch: pytest.MonkeyPatch, runtime: str, cached: bool
) -> None:
    calls: list[dict[str, int]] = []

    def counting(name: str) -> Any:
        real = getattr(reconcile, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[-1][name] += 1
            return real(*args, **kwargs)

        return counted

    for name in ("admit", "build"):
        monkeypatch.setattr(reconcile, name, counting(name))
    cluster.create(
        cluster.trainjobs,
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job"},
            "spec": {"runtimeRef": {"name": runtime}},
        },
    )

    async def three_passes() -> None:
        async with KubeClient(load_credentials(str(cluster.kubeconfig))) as client:
            metrics = OperatorMetrics()
            cache = ObjectCache() if cached else None
            reconciler = reconcile.Reconciler(client, EventRecorder(client), metrics, cache=cache)
            for _ in range(3):
                calls.append({"admit": 0, "build": 0})
                await reconciler.reconcile("default", "job")

    asyncio.run(three_passes())
    assert cluster.get(f"{cluster.jobsets}/job") is not None
    assert calls == [{"admit": 1, "build": 1}] * 3
