"""How a job's checkpoints become visible: the metrics ``trainer_sdk.checkpoint`` logs on rank 0
(through ``log_metrics``, so they reach a cluster job's ``status.trainerStatus.metrics`` and a
local job's metric history), read back as ``types.CheckpointStatus``. No torch here: the client
reads these without importing the in-pod API."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Final

from trainer_sdk import types

__all__ = [
    "ATTEMPT_METRIC",
    "RESUMED_FROM_METRIC",
    "SAVED_AT_METRIC",
    "STEP_METRIC",
    "checkpoint_status",
]

STEP_METRIC: Final = "checkpoint_step"
SAVED_AT_METRIC: Final = "checkpoint_saved_at"
ATTEMPT_METRIC: Final = "restart_attempt"
RESUMED_FROM_METRIC: Final = "resumed_from_step"


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
