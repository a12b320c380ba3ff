"""TrainJob conditions: types, reasons, and setting one the way Kubernetes does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

__all__ = [
    "COMPLETE",
    "CREATED",
    "FAILED",
    "SUSPENDED",
    "find_condition",
    "format_time",
    "is_true",
    "parse_time",
    "set_condition",
]

COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
CREATED: Final = "Created"

REASON_SUSPENDED: Final = "Suspended"
REASON_RESUMED: Final = "Resumed"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_RUNTIME_NOT_SUPPORTED: Final = "TrainingRuntimeNotSupported"
REASON_JOBS_CREATED: Final = "JobsCreationSucceeded"
REASON_BUILD_FAILED: Final = "JobsBuildFailed"

MESSAGE_SUSPENDED: Final = "TrainJob is suspended"
MESSAGE_RESUMED: Final = "TrainJob is resumed"
MESSAGE_JOBS_CREATED: Final = "Succeeded to create Jobs"


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with seconds, as Kubernetes writes times."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """A Kubernetes time (string or datetime) as an aware datetime; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def find_condition(
    conditions: Sequence[Mapping[str, Any]] | None, kind: str
) -> Mapping[str, Any] | None:
    """The condition of type ``kind``, or None."""
    return next((c for c in conditions or () if c.get("type") == kind), None)


def is_true(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> bool:
    """Whether condition ``kind`` is present with status True."""
    condition = find_condition(conditions, kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
) -> None:
    """Set condition ``kind``; its lastTransitionTime moves only when its status changes."""
    value = "True" if status else "False"
    new = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(now),
    }
    for position, existing in enumerate(conditions):
        if existing.get("type") == kind:
            if existing.get("status") == value:
                new["lastTransitionTime"] = existing.get(
                    "lastTransitionTime", new["lastTransitionTime"]
                )
            conditions[position] = new
            return
    conditions.append(new)
