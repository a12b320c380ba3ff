"""How a job's checkpoints become visible: the metrics ``trainer_sdk.checkpoint`` logs on rank 0
(through ``log_metrics``, so they reach a cluster job's ``status.trainerStatus.metrics`` and a
local job's metric history), read back as ``types.CheckpointStatus``. No torch here: the client
reads these without importing the in-pod API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Final

from trainer_sdk import types

if TYPE_CHECKING:
    from trainer_sdk.training.metrics import MetricPoint

__all__ = [
    "ATTEMPT_ENV",
    "ATTEMPT_METRIC",
    "PREEMPTED_EXIT_CODE",
    "RESUMED_FROM_METRIC",
    "SAVED_AT_METRIC",
    "STEP_METRIC",
    "checkpoint_events",
    "checkpoint_status",
]

# Which JobSet restart a process belongs to (0 for the first run); the checkpoint runtime
# plugin sets it from the pod's jobset.sigs.k8s.io/restart-attempt label, the local runner per
# attempt.
ATTEMPT_ENV: Final = "TRAINER_RESTART_ATTEMPT"
STEP_METRIC: Final = "checkpoint_step"
SAVED_AT_METRIC: Final = "checkpoint_saved_at"
ATTEMPT_METRIC: Final = "restart_attempt"
RESUMED_FROM_METRIC: Final = "resumed_from_step"
# 128 + SIGTERM: the code a process killed by SIGTERM reports, kept when it stopped cleanly.
PREEMPTED_EXIT_CODE: Final = 143


def _number(metrics: Mapping[str, str | float], name: str) -> float | None:
    value = metrics.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def checkpoint_status(metrics: Mapping[str, str | float]) -> types.CheckpointStatus | None:
    """The checkpoint status in a job's latest metric values; None when its code reported none."""
    step = _number(metrics, STEP_METRIC)
    saved_at = _number(metrics, SAVED_AT_METRIC)
    attempt = _number(metrics, ATTEMPT_METRIC)
    resumed = _number(metrics, RESUMED_FROM_METRIC)
    if step is None and attempt is None and resumed is None:
        return None
    return types.CheckpointStatus(
        step=None if step is None else int(step),
        saved_at=None if saved_at is None else datetime.fromtimestamp(saved_at, timezone.utc),
        attempt=0 if attempt is None else int(attempt),
        resumed_from_step=None if resumed is None else int(resumed),
    )


def checkpoint_events(job: str, points: Iterable[MetricPoint]) -> list[types.Event]:
    """Events from a job's metric history: ``ResumedFromCheckpoint`` for every restore, and
    ``CheckpointSaved`` for the latest checkpoint each attempt committed."""
    resumed: list[types.Event] = []
    saved: dict[int, types.Event] = {}
    for point in points:
        values = point.values
        attempt = int(values.get(ATTEMPT_METRIC, 0))
        when = datetime.fromtimestamp(point.time, timezone.utc)
        if RESUMED_FROM_METRIC in values:
            step = int(values[RESUMED_FROM_METRIC])
            message = f"attempt {attempt} resumed from the checkpoint of step {step}"
            resumed.append(types.Event("TrainJob", job, message, "ResumedFromCheckpoint", when))
        if STEP_METRIC in values:
            message = f"checkpoint of step {int(values[STEP_METRIC])} saved (attempt {attempt})"
            saved[attempt] = types.Event("TrainJob", job, message, "CheckpointSaved", when)
    return sorted([*resumed, *saved.values()], key=lambda event: event.event_time)
