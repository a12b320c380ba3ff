"""JobSet: renders the runtime info as the TrainJob's JobSet, and reads its status back.

The JobSet is named like the TrainJob, lives in its namespace and is owned by it; its labels
and annotations are the runtime template's after the runtimePatches; ``spec.suspend`` mirrors
the TrainJob's. Initializer and trainer jobs get ``replicas: 1``; each pod set's count becomes
its Job's parallelism and completions; every pod template gets the scheduler's labels and
annotations. (The TrainJob's image, command, args, resources, initializer env and trainer env
reach the containers earlier, when the runtime info is built and the ML policy applied.)
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import trainer_api
from trainer_api import Condition, JobStatus, TrainJob, TrainJobStatus

from trainer_runtime import conditions, manifests
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plan import Observed

__all__ = ["JobSet", "jobs_status"]

_ANCESTORS = (
    trainer_api.DATASET_INITIALIZER,
    trainer_api.MODEL_INITIALIZER,
    trainer_api.TRAINER_STEP,
)
_JOB_STATUS_FIELDS = ("active", "ready", "succeeded", "failed", "suspended")


def jobs_status(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The TrainJob's ``jobsStatus`` from the JobSet's replicated-job status, in JobSet order."""
    reported = {
        item.get("name"): item
        for item in (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
    }
    names = [job.get("name") for job in (jobset.get("spec") or {}).get("replicatedJobs") or ()]
    names += [name for name in reported if name not in names]
    return [
        {
            "name": name,
            **{
                field: int((reported.get(name) or {}).get(field) or 0)
                for field in _JOB_STATUS_FIELDS
            },
        }
        for name in names
    ]


class JobSet:
    """Builds the JobSet and derives Complete/Failed and jobsStatus from it."""

    name = "JobSet"

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The JobSet manifest."""
        for pod_set in info.pod_sets:
            pod_set.job["replicas"] = pod_set.replicas
            job_spec = pod_set.job.setdefault("template", {}).setdefault("spec", {})
            job_spec["parallelism"] = pod_set.count
            job_spec["completions"] = pod_set.count
            if info.scheduler.pod_labels or info.scheduler.pod_annotations:
                pod_metadata = job_spec.setdefault("template", {}).setdefault("metadata", {})
                if info.scheduler.pod_labels:
                    pod_metadata["labels"] = {
                        **(pod_metadata.get("labels") or {}),
                        **info.scheduler.pod_labels,
                    }
                if info.scheduler.pod_annotations:
                    pod_metadata["annotations"] = {
                        **(pod_metadata.get("annotations") or {}),
                        **info.scheduler.pod_annotations,
                    }
        metadata = manifests.owned_metadata(job, info.job_name, info.metadata.get("labels"))
        if info.metadata.get("annotations"):
            metadata["annotations"] = dict(info.metadata["annotations"])
        spec = dict(info.spec)
        spec["suspend"] = bool(job.spec.suspend)
        return [
            {
                "apiVersion": trainer_api.JOBSET_API_VERSION,
                "kind": "JobSet",
                "metadata": metadata,
                "spec": spec,
            }
        ]

    def derive_status(
        self, job: TrainJob, observed: Observed, now: datetime
    ) -> TrainJobStatus | None:
        """Complete or Failed from the JobSet's terminal condition; jobsStatus from its jobs
        (once the JobSet controller has reported any status)."""
        jobset = observed.jobset_doc()
        if jobset is None or not jobset.get("status"):
            return None
        jobset_conditions = (jobset.get("status") or {}).get("conditions") or ()
        terminal = [
            Condition(
                type=trainjob_type,
                status="True",
                reason=str(condition.get("reason") or jobset_type),
                message=str(condition.get("message") or ""),
                last_transition_time=(
                    conditions.parse_time(condition.get("lastTransitionTime")) or now
                ),
            )
            for jobset_type, trainjob_type in (
                ("Completed", conditions.COMPLETE),
                ("Failed", conditions.FAILED),
            )
            if (condition := conditions.find_condition(jobset_conditions, jobset_type)) is not None
            and condition.get("status") == "True"
        ]
        return TrainJobStatus(
            conditions=terminal[:1] or None,
            jobs_status=[JobStatus.model_validate(item) for item in jobs_status(jobset)],
        )
