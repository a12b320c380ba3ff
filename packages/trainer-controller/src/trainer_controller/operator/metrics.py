"""Prometheus metrics of the operator, in a registry of its own (no global state)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["OperatorMetrics", "trainjob_state"]

_STATES = ("Created", "Running", "Suspended", "Complete", "Failed")


def trainjob_state(job: Mapping[str, Any]) -> str:
    """A TrainJob's state: a true Complete/Failed/Suspended condition, else Running/Created."""
    conditions = {
        condition.get("type"): condition.get("status")
        for condition in (job.get("status") or {}).get("conditions") or []
    }
    for state in ("Complete", "Failed", "Suspended"):
        if conditions.get(state) == "True":
            return state
    return "Running" if (job.get("status") or {}).get("jobsStatus") else "Created"


class OperatorMetrics:
    """Reconciles, errors, latency, TrainJobs by state, API writes and leadership."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._states: dict[tuple[str, str], str] = {}
        self.reconciles = Counter(
            "trainer_reconciles",
            "TrainJob reconciles by result.",
            ["result"],
            registry=self.registry,
        )
        self.errors = Counter(
            "trainer_reconcile_errors",
            "Failed reconciles by error kind.",
            ["kind"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "trainer_reconcile_duration_seconds",
            "Time one reconcile takes.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.trainjobs = Gauge(
            "trainer_trainjobs", "TrainJobs seen, by state.", ["state"], registry=self.registry
        )
        self.writes = Counter(
            "trainer_api_writes", "API writes by verb.", ["verb"], registry=self.registry
        )
        self.reads = Counter(
            "trainer_reconcile_reads",
            "Object reads by the reconcile, by source (the informer cache or the API server).",
            ["source"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "trainer_leader", "1 while this replica holds the leader Lease.", registry=self.registry
        )
        self.webhook_requests = Counter(
            "trainer_webhook_requests",
            "Admission reviews by webhook and verdict.",
            ["webhook", "allowed"],
            registry=self.registry,
        )
        self.progress_requests = Counter(
            "trainer_progress_requests",
            "Progress endpoint requests by status code.",
            ["code"],
            registry=self.registry,
        )

    def record_trainjob(self, key: tuple[str, str], job: Mapping[str, Any] | None) -> None:
        """Count ``key`` under its job's state (None: the job is gone)."""
        if job is None:
            self._states.pop(key, None)
        else:
            self._states[key] = trainjob_state(job)
        counts = dict.fromkeys(_STATES, 0)
        for state in self._states.values():
            counts[state] += 1
        for state, count in counts.items():
            self.trainjobs.labels(state).set(count)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
