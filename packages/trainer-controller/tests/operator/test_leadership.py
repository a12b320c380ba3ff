"""High availability: one active replica at a time, and failover."""

from __future__ import annotations

import asyncio

import pytest
from trainer_controller.operator.apiclient import KubeClient
from trainer_controller.operator.credentials import load_credentials
from trainer_controller.operator.leader import LeaderElector

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kubeflow-system/leases/trainer-controller"


def trainjob(name: str) -> dict[str, object]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


@pytest.mark.e2e
def test_two_replicas_one_active_then_failover(cluster) -> None:  # type: ignore[no-untyped-def]
    first = cluster.replica("replica-a")
    cluster.wait_for(lambda: first.leading, what="replica-a to lead")
    second = cluster.replica("replica-b")
    cluster.create(cluster.trainjobs, trainjob("before"))
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/before"), what="the first JobSet")
    assert (first.leading, second.leading) == (True, False)
    assert cluster.get(LEASE)["spec"]["holderIdentity"] == "replica-a"
    first.stop()
    cluster.wait_for(lambda: second.leading, what="replica-b to take over")
    cluster.create(cluster.trainjobs, trainjob("after"))
    cluster.wait_for(
        lambda: cluster.get(f"{cluster.jobsets}/after"), what="the JobSet made by replica-b"
    )
    lease = cluster.get(LEASE)["spec"]
    assert (lease["holderIdentity"], lease["leaseTransitions"]) == ("replica-b", 1)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_standby_takes_an_unrenewed_lease_only_after_it_expires(cluster) -> None:  # type: ignore[no-untyped-def]
    clock = FakeMonotonic()

    async def scenario() -> list[bool]:
        async with KubeClient(load_credentials(str(cluster.kubeconfig))) as client:
            holder = LeaderElector(
                client,
                "kubeflow-system",
                "lease",
                "a",
                lease_duration=10,
                renew_period=1,
                monotonic=clock,
            )
            standby = LeaderElector(
                client,
                "kubeflow-system",
                "lease",
                "b",
                lease_duration=10,
                renew_period=1,
                monotonic=clock,
            )
            results = [await holder.try_acquire(), await standby.try_acquire()]
            clock.now = 9.0
            results.append(await standby.try_acquire())  # not expired yet: the holder may renew
            clock.now = 10.5
            results.append(await standby.try_acquire())  # unchanged for longer than the duration
            results.append(
                await holder.try_acquire()
            )  # the old holder now sees someone else's fresh record
            return results

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=20)) == [
        True,
        False,
        False,
        True,
        False,
    ]
