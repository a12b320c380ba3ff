"""The operator process: listeners on every replica; watches and reconciles only on the leader.

Start-up order: health and metrics listeners; certificates (unless ``webhooks`` is off), then the
webhook and progress listeners; readiness; then wait for the Lease and, once leader, run the
informers and the reconcile workers until told to stop or the Lease is lost (then the process
exits non-zero so its Deployment restarts it as a standby).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable
from typing import Any

from trainer_runtime import Settings, StatusServer

from trainer_controller.operator import certificates
from trainer_controller.operator.apiclient import ApiStatusError, KubeClient
from trainer_controller.operator.config import OperatorConfig
from trainer_controller.operator.credentials import Credentials
from trainer_controller.operator.events import EventRecorder
from trainer_controller.operator.informer import ObjectCache
from trainer_controller.operator.leader import LeaderElector
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.operator.offload import Offload
from trainer_controller.operator.optimization_reconcile import OptimizationReconciler
from trainer_controller.operator.progress import ProgressLimits, progress_routes
from trainer_controller.operator.reconcile import Reconciler
from trainer_controller.operator.servers import Listener, health_routes, metrics_routes
from trainer_controller.operator.watching import Watches
from trainer_controller.operator.webhooks import webhook_routes
from trainer_controller.operator.workqueue import WorkQueue

__all__ = ["Operator"]

logger = logging.getLogger(__name__)
Key = tuple[str, str]


async def _first(*awaitables: Awaitable[Any]) -> None:
    """Wait until one finishes (re-raising its error); cancel the rest."""
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _progress_limits(config: OperatorConfig) -> ProgressLimits:
    return ProgressLimits(
        per_job_qps=config.progress_qps_per_job,
        per_job_burst=config.progress_burst_per_job,
        review_qps=config.progress_review_qps,
        review_burst=config.progress_review_burst,
        source_review_qps=config.progress_review_qps_per_source,
        source_review_burst=config.progress_review_burst_per_source,
        job_source_review_qps=config.progress_review_qps_per_job_source,
        job_source_review_burst=config.progress_review_burst_per_job_source,
    )


class Operator:
    """One replica of the controller."""

    def __init__(
        self, config: OperatorConfig, credentials: Credentials, identity: str | None = None
    ) -> None:
        self.config, self.credentials = config, credentials
        self.identity = identity or f"{socket.gethostname()}-{os.getpid()}"
        self.metrics = OperatorMetrics()
        self.serving = asyncio.Event()  # listeners up (readiness)
        self.leading = asyncio.Event()  # holds the Lease and reconciles
        self.listeners: dict[str, Listener] = {}
        self.offloads: dict[str, Offload] = {}  # request work off the event loop, per endpoint
        self.certificate: certificates.ServingCertificate | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set; raises LostLeadershipError if the Lease is lost."""
        config = self.config
        async with KubeClient(self.credentials, config.api_qps, config.api_burst) as client:
            try:
                await self._listen(client)
                self.serving.set()
                elector = (
                    LeaderElector(
                        client,
                        config.lease_namespace,
                        config.lease_name,
                        self.identity,
                        config.lease_duration_seconds,
                        config.renew_period_seconds,
                    )
                    if config.leader_election
                    else None
                )
                if elector is not None:
                    await _first(elector.acquire(), stop.wait())
                if not stop.is_set():
                    self.leading.set()
                    self.metrics.leader.set(1)
                    try:
                        await _first(
                            self._reconcile_until(stop, client),
                            *([elector.hold()] if elector else []),
                        )
                    finally:
                        self.leading.clear()
                        self.metrics.leader.set(0)
                        if elector is not None:
                            with contextlib.suppress(ApiStatusError, OSError):
                                await elector.release()
            finally:
                self.serving.clear()
                for listener in self.listeners.values():
                    await listener.stop()
                for offload in self.offloads.values():
                    offload.close()

    async def _listen(self, client: KubeClient) -> None:
        config, host = self.config, self.config.bind_address
        self.listeners["health"] = Listener(
            health_routes(lambda: True, self.serving.is_set), host, config.health_port
        )
        self.listeners["metrics"] = Listener(
            metrics_routes(self.metrics), host, config.metrics_port
        )
        tls = None
        if config.webhooks:
            self.certificate = (
                certificates.load_certificate_dir(config.cert_dir)
                if config.cert_dir
                else await certificates.ensure_secret(
                    client, config.service_namespace, config.cert_secret, config.service_name
                )
            )
            if not config.cert_dir:
                await certificates.patch_ca_bundles(
                    client,
                    self.certificate.ca_pem,
                    config.validating_webhook,
                    config.mutating_webhook,
                )
            tls = self.certificate.ssl_context()
            self.offloads["webhooks"] = Offload("admission")
            self.listeners["webhooks"] = Listener(
                webhook_routes(client, self.metrics, offload=self.offloads["webhooks"]),
                host,
                config.webhook_port,
                tls,
            )
        if config.gate("TrainJobProgress"):
            self.offloads["progress"] = Offload("progress")
            self.listeners["progress"] = Listener(
                progress_routes(
                    client,
                    self.metrics,
                    limits=_progress_limits(config),
                    offload=self.offloads["progress"],
                ),
                host,
                config.progress_port,
                tls,
            )
        for listener in self.listeners.values():
            await listener.start()

    def _build_settings(self) -> Settings:
        """The status server trainers report to, when the progress endpoint is served over TLS."""
        if self.certificate is None or "progress" not in self.listeners:
            return Settings()
        config = self.config
        url = f"https://{config.service_name}.{config.service_namespace}.svc:{config.progress_port}"
        return Settings(
            status_server=StatusServer(url=url, ca_cert=self.certificate.ca_pem.decode())
        )

    async def _reconcile_until(self, stop: asyncio.Event, client: KubeClient) -> None:
        """Informers feed the queues; ``concurrency`` workers reconcile TrainJobs, one worker
        OptimizationJobs (each pass is cheap next to the trials it starts)."""
        config = self.config
        queue: WorkQueue[Key] = WorkQueue(config.backoff_base_seconds, config.backoff_max_seconds)
        optimizations: WorkQueue[Key] = WorkQueue(
            config.backoff_base_seconds, config.backoff_max_seconds
        )
        cache = ObjectCache(config.cache_resync_seconds) if config.informer_cache else None
        reconciler = Reconciler(
            client,
            EventRecorder(client),
            self.metrics,
            self._build_settings(),
            cache=cache,
        )
        informers = Watches(queue, optimizations, cache).informers(client, config.namespaces)
        workers = [self._work(queue, reconciler) for _ in range(config.concurrency)]
        workers.append(self._work(optimizations, OptimizationReconciler(client)))
        watches = asyncio.gather(*(informer.run() for informer in informers))
        await _first(stop.wait(), watches, *workers)

    async def _work(
        self, queue: WorkQueue[Key], reconciler: Reconciler | OptimizationReconciler
    ) -> None:
        while True:
            key = await queue.get()
            started = time.monotonic()
            try:
                requeue_after = await reconciler.reconcile(*key)
            except Exception as error:  # every failure is retried with back-off, and counted
                delay = queue.retry(key)
                kind = (
                    f"http-{error.code}"
                    if isinstance(error, ApiStatusError)
                    else type(error).__name__
                )
                self.metrics.errors.labels(kind).inc()
                self.metrics.reconciles.labels("error").inc()
                logger.warning(
                    "reconcile failed; retrying",
                    extra={
                        "trainjob": "/".join(key),
                        "retry_in_seconds": round(delay, 3),
                        "error": str(error),
                    },
                    exc_info=not isinstance(error, ApiStatusError),
                )
            else:
                queue.forget(key)
                if requeue_after is not None:
                    queue.add_after(key, requeue_after)
                self.metrics.reconciles.labels("success").inc()
            finally:
                queue.done(key)
                self.metrics.latency.observe(time.monotonic() - started)
