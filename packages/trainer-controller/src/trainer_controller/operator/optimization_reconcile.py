"""One level-triggered reconcile of one OptimizationJob: read it and its trials, plan, write."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

import trainer_api
from trainer_api import OPTIMIZATION_JOB_LABEL, WARM_START_ANNOTATION

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, resource_path
from trainer_controller.operator.optimization import plan_optimization

__all__ = ["OptimizationReconciler", "owned_trials"]

logger = logging.getLogger(__name__)


def owned_trials(items: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """The TrainJobs among ``items`` that the OptimizationJob with ``uid`` owns."""
    return [
        item
        for item in items
        if any(ref.get("uid") == uid for ref in item["metadata"].get("ownerReferences") or [])
    ]


class OptimizationReconciler:
    """Drives ``plan_optimization`` for OptimizationJobs through a KubeClient."""

    def __init__(
        self,
        client: KubeClient,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self._client, self._clock = client, clock

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """Create the next trials, record what the trials reported, write the status."""
        api = trainer_api.TRAINER_API_VERSION
        manifest = await self._client.get(resource_path(api, "OptimizationJob", namespace, name))
        if manifest is None or (manifest.get("metadata") or {}).get("deletionTimestamp"):
            return None  # owner references delete the trials
        trials = await self._trials(namespace, name, manifest["metadata"]["uid"])
        earlier = (manifest["metadata"].get("annotations") or {}).get(WARM_START_ANNOTATION)
        prior = await self._trials(namespace, earlier) if earlier else []
        plan = plan_optimization(manifest, trials, self._clock(), prior)
        for trial in plan.create:
            try:
                await self._client.create(resource_path(api, "TrainJob", namespace), trial)
            except ApiStatusError as error:
                if error.code != 409:  # created by an earlier pass whose list was stale
                    raise
        for change in plan.patches:
            await self._client.merge_patch(
                resource_path(api, "TrainJob", namespace, change.name), change.patch
            )
        await self._write_status(manifest, plan.status)
        return None

    async def _trials(
        self, namespace: str, name: str, uid: str | None = None
    ) -> list[dict[str, Any]]:
        """The trial TrainJobs of OptimizationJob ``name`` (those it owns, given its ``uid``)."""
        api = trainer_api.TRAINER_API_VERSION
        listed = await self._client.list(
            resource_path(api, "TrainJob", namespace), f"{OPTIMIZATION_JOB_LABEL}={name}"
        )
        return listed if uid is None else owned_trials(listed, uid)

    async def _write_status(
        self, manifest: Mapping[str, Any], status: dict[str, Any] | None
    ) -> None:
        if status is None or manifest.get("status") == status:
            return
        metadata = manifest["metadata"]
        await self._client.merge_patch(
            resource_path(
                trainer_api.TRAINER_API_VERSION,
                "OptimizationJob",
                metadata["namespace"],
                metadata["name"],
                "status",
            ),
            {"status": status},
        )
