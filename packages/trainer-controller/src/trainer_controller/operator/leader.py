"""Leader election over a coordination.k8s.io/v1 Lease, so only one replica reconciles.

Expiry is judged the way client-go does: by how long *this* replica has seen the Lease record
unchanged (its own monotonic clock), never by comparing another machine's timestamps with ours.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, resource_path

__all__ = ["LeaderElector", "LostLeadershipError"]

logger = logging.getLogger(__name__)


class LostLeadershipError(Exception):
    """The Lease could not be renewed in time; another replica may now be leader."""


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire, hold and release one Lease as ``identity``."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_period: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if renew_period >= lease_duration:
            raise ValueError("renew_period: must be shorter than lease_duration")
        self._client, self._identity = client, identity
        self._path = resource_path("coordination.k8s.io/v1", "Lease", namespace, name)
        self._collection = resource_path("coordination.k8s.io/v1", "Lease", namespace)
        self._namespace, self._name = namespace, name
        self._duration, self._period, self._monotonic = lease_duration, renew_period, monotonic
        self._observed: tuple[Any, float] | None = None  # (holder spec, when we first saw it)

    def _spec(self, transitions: int, acquired: str | None) -> dict[str, Any]:
        now = _micro_time(datetime.now(timezone.utc))
        return {
            "holderIdentity": self._identity,
            "leaseDurationSeconds": max(1, round(self._duration)),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def try_acquire(self) -> bool:
        """One attempt to take or renew the Lease; True while we hold it."""
        lease = await self._client.get(self._path)
        try:
            if lease is None:
                await self._client.create(
                    self._collection,
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self._name, "namespace": self._namespace},
                        "spec": self._spec(0, None),
                    },
                )
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            record = (holder, spec.get("renewTime"))
            if self._observed is None or self._observed[0] != record:
                self._observed = (record, self._monotonic())
            expired = self._monotonic() - self._observed[1] > float(
                spec.get("leaseDurationSeconds") or 0
            )
            if holder not in ("", self._identity) and not expired:
                return False
            mine = holder == self._identity
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine else 1)
            lease["spec"] = self._spec(transitions, spec.get("acquireTime") if mine else None)
            await self._client.replace(self._path, lease)
            return True
        except ApiStatusError as error:
            if error.code == 409:  # somebody else wrote the Lease first
                return False
            raise

    async def acquire(self) -> None:
        """Wait until this replica is leader."""
        while not await self.try_acquire():
            await asyncio.sleep(self._period)
        logger.info("became leader", extra={"lease": self._name, "identity": self._identity})

    async def hold(self) -> None:
        """Renew until cancelled; LostLeadershipError when renewals fail for a Lease duration."""
        last_renewed = self._monotonic()
        while True:
            await asyncio.sleep(self._period)
            try:
                renewed = await self.try_acquire()
            except (ApiStatusError, OSError) as error:
                logger.warning("lease renewal failed", extra={"error": str(error)})
                renewed = False
            if renewed:
                last_renewed = self._monotonic()
            elif self._monotonic() - last_renewed >= self._duration - self._period:
                raise LostLeadershipError(
                    f"Lease {self._namespace}/{self._name}: not renewed in time"
                )

    async def release(self) -> None:
        """Give the Lease up so a standby takes over without waiting for expiry."""
        lease = await self._client.get(self._path)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self._identity:
            return
        lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
        try:
            await self._client.replace(self._path, lease)
        except ApiStatusError as error:
            if error.code != 409:
                raise
