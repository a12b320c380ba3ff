"""What the UI's JSON API returns, built from the SDK's types and the raw manifests (pure: the
clock is an argument)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from trainer_sdk import constants, types
from trainer_sdk.metrics import MetricPoint
from trainer_sdk.runtimes import runtime_from_manifest

__all__ = ["job_detail", "job_summary", "metric_series", "runtime_view"]

_FINISHED = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED)


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def job_summary(job: types.TrainJob, finished: str | None, now: datetime) -> dict[str, Any]:
    """One row of the job list: ``finished`` is when it completed or failed (ISO 8601)."""
    reported = job.trainer_status
    duration = None
    if job.status not in _FINISHED:
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


def job_detail(
    job: types.TrainJob,
    trainjob: Mapping[str, Any],
    jobset: Mapping[str, Any] | None,
    events: Sequence[types.Event],
    finished: str | None,
    now: datetime,
) -> dict[str, Any]:
    """The job page: its row, steps, conditions, events and both objects as YAML."""
    return {
        **job_summary(job, finished, now),
        "steps": [
            {
                "name": step.name,
                "status": step.status or constants.UNKNOWN,
                "pod": step.pod_name,
                "device": step.device,
                "deviceCount": step.device_count,
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
        "trainjobYaml": yaml.safe_dump(dict(trainjob), sort_keys=False),
        "jobsetYaml": yaml.safe_dump(dict(jobset), sort_keys=False) if jobset else None,
    }


def metric_series(points: Sequence[MetricPoint]) -> dict[str, Any]:
    """Per metric, per rank: steps and values, ready to chart (NaN and infinities dropped)."""
    series: dict[str, dict[str, dict[str, list[float]]]] = {}
    for point in points:
        for name, value in point.values.items():
            if value - value != 0:
                continue  # not finite: JSON cannot carry it and a chart cannot draw it
            line = series.setdefault(name, {}).setdefault(str(point.rank), {"x": [], "y": []})
            line["x"].append(point.step)
            line["y"].append(value)
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
