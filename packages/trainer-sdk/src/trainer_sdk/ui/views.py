"""What the UI's JSON API returns, built from the SDK's types and the raw manifests (pure: the
clock is an argument)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from trainer_sdk import constants, types
from trainer_sdk.errors import JobFailedError
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.training.metrics import MetricPoint
from trainer_sdk.ui.jobindex import IndexedJob

__all__ = [
    "SEARCH_LIMIT",
    "job_detail",
    "job_summary",
    "log_matches",
    "metric_series",
    "runtime_view",
]

SEARCH_LIMIT = 1000
SORT_KEYS = ("name", "status", "runtime", "nodes", "progress", "created", "age", "duration")
_PREFIXED = {"arg:": "funcArgs", "label:": "labels", "metric:": "latest"}

_ACTIVE = (constants.TRAINJOB_CREATED, constants.TRAINJOB_RUNNING)  # its duration still grows


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def log_matches(lines: Iterable[str], needle: str, limit: int = SEARCH_LIMIT) -> dict[str, Any]:
    """The first ``limit`` lines holding ``needle`` (any case), numbered from 1; read as a stream,
    so a log of any size costs one line of memory beyond the matches."""
    wanted = needle.lower()
    matches: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if wanted in line.lower():
            if len(matches) == limit:
                return {"matches": matches, "truncated": True}
            matches.append({"line": number, "text": line})
    return {"matches": matches, "truncated": False}


def job_summary(job: types.TrainJob, finished: str | None, now: datetime) -> dict[str, Any]:
    """One row of the job list: ``finished`` is when it completed or failed (ISO 8601). Any
    status other than Created and Running (Complete, Failed, Stopped, Suspended, Preempted...)
    has stopped its clock."""
    reported = job.trainer_status
    duration = None
    if job.status in _ACTIVE:
        duration = (now - job.creation_timestamp).total_seconds()
    elif end := _parse(finished) or (reported.last_updated_time if reported else None):
        duration = (end - job.creation_timestamp).total_seconds()
    return {
        "name": job.name,
        "status": job.status,
        "runtime": job.runtime.name,
        "nodes": job.num_nodes,
        "progress": reported.progress_percentage if reported else None,
        "eta": reported.estimated_remaining_seconds if reported else None,
        "metrics": dict(reported.metrics) if reported else {},
        "created": job.creation_timestamp.isoformat(),
        "age": max(0.0, (now - job.creation_timestamp).total_seconds()),
        "duration": None if duration is None else max(0.0, duration),
        "message": job.message,
    }


def job_row(indexed: IndexedJob, now: datetime) -> dict[str, Any]:
    """A row of the job list: the summary, the job's labels, ``func_args`` and latest metrics."""
    return {
        **job_summary(indexed.job, indexed.finished, now),
        "labels": indexed.labels,
        "funcArgs": indexed.func_args,
        "latest": indexed.latest,
    }


def _sort_value(row: Mapping[str, Any], key: str) -> Any:
    prefix, colon, name = key.partition(":")
    return row[_PREFIXED[prefix + colon]].get(name) if colon else row[key]


def _haystack(row: Mapping[str, Any]) -> str:
    words = [row["name"], row["status"], row["runtime"]]
    words += [f"{key}={value}" for key, value in {**row["labels"], **row["funcArgs"]}.items()]
    return " ".join(str(word) for word in words).lower()


def select_rows(
    rows: Sequence[Mapping[str, Any]],
    query: str = "",
    status: str = "",
    sort: str = "created",
    descending: bool = True,
) -> list[Mapping[str, Any]]:
    """The rows holding every word of ``query`` (name, status, runtime, ``key=value`` of labels
    and func_args), of ``status`` when given, sorted by ``sort`` (a column, or ``arg:NAME``,
    ``label:NAME``, ``metric:NAME``); rows without a value come last either way."""
    if sort not in SORT_KEYS and not sort.startswith(tuple(_PREFIXED)):
        raise ValueError(
            f"sort: expected one of {', '.join(SORT_KEYS)}, arg:NAME, label:NAME or "
            f"metric:NAME, got {sort!r}"
        )
    words = query.lower().split()
    chosen = [
        row
        for row in rows
        if (not status or row["status"] == status) and all(word in _haystack(row) for word in words)
    ]
    keyed = [(_sort_value(row, sort), row) for row in chosen]
    present = [(value, row) for value, row in keyed if value is not None]
    missing = [row for value, row in keyed if value is None]
    try:
        present.sort(key=lambda pair: pair[0], reverse=descending)
    except TypeError:  # mixed kinds (a func_arg that is a number here, text there)
        present.sort(key=lambda pair: str(pair[0]), reverse=descending)
    return [row for _, row in present] + missing


def _conditions(manifest: Mapping[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "type": str(condition.get("type", "")),
            "status": str(condition.get("status", "")),
            "reason": str(condition.get("reason") or ""),
            "message": str(condition.get("message") or ""),
            "time": str(condition.get("lastTransitionTime") or ""),
        }
        for condition in (manifest.get("status") or {}).get("conditions") or []
    ]


def failure_view(error: JobFailedError, points: Sequence[MetricPoint]) -> dict[str, Any]:
    """What a failed job's page leads with: the user's exception, the rank and the JobSet step
    that raised it, that rank's last recorded training step (the job's, where only rank 0
    records metrics), and its traceback (or the step's last log lines when the log shows no
    exception)."""
    steps = [point.step for point in points]
    own = [point.step for point in points if point.rank == error.rank] or steps
    return {
        "exception": error.exception,
        "reason": error.reason,
        "rank": error.rank,
        "step": error.step,
        "trainingStep": max(own) if own else None,
        "traceback": list(error.last_lines),
    }


def job_detail(
    job: types.TrainJob,
    trainjob: Mapping[str, Any],
    jobset: Mapping[str, Any] | None,
    events: Sequence[types.Event],
    finished: str | None,
    now: datetime,
    failure: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The job page: its row, steps, conditions, events, both objects as YAML, and for a failed
    job ``failure`` (``failure_view``); a failed step other than the one that raised ended
    because of it (``endedBy``)."""
    raised = failure["step"] if failure else None
    return {
        **job_summary(job, finished, now),
        "failure": failure,
        "steps": [
            {
                "name": step.name,
                "status": step.status or constants.UNKNOWN,
                "pod": step.pod_name,
                "device": step.device,
                "deviceCount": step.device_count,
                "endedBy": raised
                if raised and step.status == constants.TRAINJOB_FAILED and step.name != raised
                else None,
            }
            for step in job.steps
        ],
        "conditions": _conditions(trainjob),
        "events": [
            {
                "time": event.event_time.isoformat(),
                "kind": event.involved_object_kind,
                "object": event.involved_object_name,
                "reason": event.reason,
                "message": event.message,
            }
            for event in events
        ],
        "checkpoint": _checkpoint(job.checkpoint, now),
        "gemsKernels": job.gems_kernels,
        "trainjobYaml": yaml.safe_dump(dict(trainjob), sort_keys=False),
        "jobsetYaml": yaml.safe_dump(dict(jobset), sort_keys=False) if jobset else None,
    }


def _checkpoint(found: types.CheckpointStatus | None, now: datetime) -> dict[str, Any] | None:
    """The latest checkpoint (``trainer_sdk.checkpoint``): its step and age, the attempt running
    and the step that attempt resumed from; None before the first save."""
    if found is None or found.step is None:
        return None
    return {
        "step": found.step,
        "age": found.age_seconds(now),
        "attempt": found.attempt,
        "resumedFrom": found.resumed_from_step,
    }


def metric_series(points: Sequence[MetricPoint]) -> dict[str, Any]:
    """Per metric, per rank: steps, values and wall times (Unix seconds), ready to chart (NaN and
    infinities dropped)."""
    series: dict[str, dict[str, dict[str, list[float]]]] = {}
    for point in points:
        for name, value in point.values.items():
            if value - value != 0:
                continue  # not finite: JSON cannot carry it and a chart cannot draw it
            line = series.setdefault(name, {}).setdefault(
                str(point.rank), {"x": [], "y": [], "t": []}
            )
            line["x"].append(point.step)
            line["y"].append(value)
            line["t"].append(point.time)
    return {"count": len(points), "metrics": dict(sorted(series.items()))}


def runtime_view(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A runtime and what it builds: its ML policy and the replicated jobs of its JobSet."""
    runtime = runtime_from_manifest(manifest)
    spec = manifest.get("spec") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    replicated = []
    for job in template.get("replicatedJobs") or []:
        pod = ((job.get("template") or {}).get("spec") or {}).get("template") or {}
        containers = ((pod.get("spec") or {}).get("containers")) or []
        replicated.append(
            {
                "name": job.get("name", ""),
                "replicas": job.get("replicas", 1),
                "dependsOn": [item.get("name", "") for item in job.get("dependsOn") or []],
                "containers": [
                    {"name": item.get("name", ""), "image": item.get("image", "")}
                    for item in containers
                ],
            }
        )
    return {
        "name": runtime.name,
        "kind": str(manifest.get("kind", "")),
        "framework": runtime.trainer.framework,
        "trainerType": runtime.trainer.trainer_type.value,
        "nodes": runtime.trainer.num_nodes,
        "device": runtime.trainer.device,
        "deviceCount": runtime.trainer.device_count,
        "mlPolicy": sorted(key for key in (spec.get("mlPolicy") or {}) if key != "numNodes"),
        "podGroupPolicy": sorted((spec.get("podGroupPolicy") or {}).keys()),
        "replicatedJobs": replicated,
        "yaml": yaml.safe_dump(dict(manifest), sort_keys=False),
    }
