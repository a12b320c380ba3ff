"""Kubernetes Events about TrainJobs (core/v1), e.g. when an owned object cannot be created."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, resource_path

__all__ = ["EventRecorder"]

logger = logging.getLogger(__name__)


class EventRecorder:
    """Posts Events as component ``trainer-controller``."""

    def __init__(self, client: KubeClient, component: str = "trainer-controller") -> None:
        self._client, self._component = client, component

    async def warn(self, involved: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a Warning; a failure to record is logged, not raised over the real problem."""
        metadata = involved.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{metadata.get('name')}.{uuid.uuid4().hex[:10]}",
                "namespace": namespace,
            },
            "involvedObject": {
                "apiVersion": involved.get("apiVersion"),
                "kind": involved.get("kind"),
                "name": metadata.get("name"),
                "namespace": namespace,
                "uid": metadata.get("uid"),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning",
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self._client.create(resource_path("v1", "Event", namespace), event)
        except ApiStatusError as error:
            logger.warning("could not record event", extra={"reason": reason, "error": str(error)})
