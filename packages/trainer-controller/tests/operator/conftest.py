"""Operator tests on the API stand-in: a cluster with the CRDs, and replicas in threads."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kube_standin import TRAINER_TYPES, ApiServer, ResourceType
from trainer_controller.operator import Operator, OperatorConfig, load_credentials
from trainer_runtime import builtin_runtimes

T = TypeVar("T")

TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"


def wait_for(check: Callable[[], T | None], timeout: float = 20.0, what: str = "condition") -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)  # polling interval, not synchronisation: the deadline bounds the wait


class Replica:
    """One operator replica running in its own thread and event loop."""

    def __init__(self, config: OperatorConfig, kubeconfig: Path, identity: str) -> None:
        self.operator = Operator(config, load_credentials(str(kubeconfig)), identity=identity)
        self.error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name=identity, daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            await self.operator.run(self._stop)

        try:
            self._loop.run_until_complete(main())
        except BaseException as error:  # surfaced by the test through .error
            self.error = error
        finally:
            self._loop.close()

    def start(self) -> Replica:
        self._thread.start()
        wait_for(lambda: self.operator.serving.is_set() or self.error, what="listeners")
        if self.error:
            raise self.error
        return self

    @property
    def leading(self) -> bool:
        return self.operator.leading.is_set()

    def stop(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "replica did not stop"


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_config(**changes: Any) -> OperatorConfig:
    return OperatorConfig(
        health_port=0,
        metrics_port=0,
        webhook_port=0,
        progress_port=0,
        bind_address="127.0.0.1",
        webhooks=False,
        lease_namespace="kubeflow-system",
        service_namespace="kubeflow-system",
        lease_duration_seconds=1.0,
        renew_period_seconds=0.2,
        concurrency=4,
        log_format="text",
    ).replace(**changes)


class Cluster:
    """The stand-in with the CRDs, the built-in runtimes and a kubeconfig; starts replicas."""

    trainjobs, jobsets, configmaps, secrets = TRAINJOBS, JOBSETS, CONFIGMAPS, SECRETS
    wait_for = staticmethod(wait_for)

    def __init__(self, server: ApiServer, directory: Path) -> None:
        self.server = server
        self.kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
        self.replicas: list[Replica] = []

    def replica(self, identity: str = "replica-a", **changes: Any) -> Replica:
        replica = Replica(test_config(**changes), self.kubeconfig, identity)
        self.replicas.append(replica)
        return replica.start()

    def get(self, path: str) -> dict[str, Any] | None:
        status, body = self.server.request("GET", path)
        assert status in (200, 404), body
        return body if status == 200 else None

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, created = self.server.request("POST", path, body)
        assert status == 201, created
        return created

    def patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        status, patched = self.server.request("PATCH", path, patch, "application/merge-patch+json")
        assert status == 200, patched
        return patched


def _cluster(directory: Path, types: tuple[ResourceType, ...]) -> Iterator[Cluster]:
    with ApiServer() as server:
        for rtype in types:
            server.call(server.store.register, rtype)
        server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "kubeflow-system"}})
        for runtime in builtin_runtimes().values():
            status, body = server.request(
                "POST",
                "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
                runtime.to_dict(),
            )
            assert status == 201, body
        running = Cluster(server, directory)
        try:
            yield running
        finally:
            for replica in running.replicas:
                replica.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    yield from _cluster(tmp_path, TRAINER_TYPES)


@pytest.fixture
def cluster_without_jobset_crd(tmp_path: Path) -> Iterator[Cluster]:
    yield from _cluster(tmp_path, tuple(rtype for rtype in TRAINER_TYPES if rtype.kind != "JobSet"))
