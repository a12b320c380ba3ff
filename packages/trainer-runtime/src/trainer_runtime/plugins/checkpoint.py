"""Checkpoint: a TrainJob annotated with a checkpoint volume gets it mounted in its trainer, and
restarts that do not spend its ``maxRestarts`` when a pod was preempted.

No new API field: the TrainJob (or its runtime's JobSet template) carries annotations, so every
upstream manifest stays valid and an annotated one still runs on upstream's controller (without
the mount):

- ``trainer.kubeflow.org/checkpoint-volume: CLAIM``: the trainer pods mount the
  PersistentVolumeClaim CLAIM (ReadWriteMany for more than one node; locally, the named local
  volume) at ``trainer.kubeflow.org/checkpoint-mount-path`` (default ``/checkpoints``), and the
  trainer container gets ``TRAINER_CHECKPOINT_DIR=<mount path>/<job name>`` (one claim serves
  many jobs; a job submitted again under the same name resumes) and ``TRAINER_RESTART_ATTEMPT``
  (the pod's ``jobset.sigs.k8s.io/restart-attempt`` label), which ``trainer_sdk.checkpoint``
  reads.

Failure policies (``restart_policies``) are added to a checkpointing job, and to any JobSet whose
runtime asks for restarts (``failurePolicy``) without rules of its own: every Job whose pods do
not say otherwise gets ``restartPolicy: Never`` and a ``podFailurePolicy`` whose first rule fails
the Job when a pod was disrupted (``DisruptionTarget``: preemption, eviction, node drain) and
whose second fails it when a container exits with a code of ``exit_codes.FAIL_EXIT_CODES`` (its
command cannot run); the JobSet's ``failurePolicy.rules`` then restart the whole JobSet without
counting the restart for the first (``RestartJobSetAndIgnoreMaxRestarts``, matched by the Job's
failure message) and fail it at once for the second. Any other failure (a Python error, an OOM
kill, a crash signal) counts against ``backoffLimit`` and restarts the JobSet within
``maxRestarts``: the exit-code policy of ``exit_codes``, which the local executor applies too.
"""

from __future__ import annotations

import re
from typing import Any, Final

from trainer_api import FieldError, TrainJob

from trainer_runtime import exit_codes, podspecs
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins._policies import reserved_env_errors

__all__ = [
    "ATTEMPT_ENV",
    "CHECKPOINT_DIR_ENV",
    "DEFAULT_MOUNT_PATH",
    "MOUNT_PATH_ANNOTATION",
    "RESTART_ATTEMPT_LABEL",
    "VOLUME_ANNOTATION",
    "VOLUME_NAME",
    "Checkpoint",
    "pod_failure_policy",
    "restart_rules",
]

VOLUME_ANNOTATION: Final = "trainer.kubeflow.org/checkpoint-volume"
MOUNT_PATH_ANNOTATION: Final = "trainer.kubeflow.org/checkpoint-mount-path"
DEFAULT_MOUNT_PATH: Final = "/checkpoints"
VOLUME_NAME: Final = "checkpoints"
CHECKPOINT_DIR_ENV: Final = "TRAINER_CHECKPOINT_DIR"
ATTEMPT_ENV: Final = "TRAINER_RESTART_ATTEMPT"
RESTART_ATTEMPT_LABEL: Final = "jobset.sigs.k8s.io/restart-attempt"
# The Job controller's message for a pod-condition rule: "Pod NS/NAME has condition
# DisruptionTarget matching FailJob rule at index 0".
DISRUPTION_MESSAGE_PATTERN: Final = "has condition DisruptionTarget"
_CLAIM_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def pod_failure_policy() -> dict[str, Any]:
    """The Job ``podFailurePolicy``: a disruption and a command that cannot run each fail the
    Job at once (with messages the JobSet rules tell apart)."""
    return {
        "rules": [
            {
                "action": "FailJob",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {
                "action": "FailJob",
                "onExitCodes": {"operator": "In", "values": list(exit_codes.FAIL_EXIT_CODES)},
            },
        ]
    }


def restart_rules() -> list[dict[str, Any]]:
    """The JobSet ``failurePolicy.rules`` that go with ``pod_failure_policy``."""
    return [
        {
            "name": "RestartOnDisruption",
            "action": "RestartJobSetAndIgnoreMaxRestarts",
            "onJobFailureReasons": ["PodFailurePolicy"],
            "onJobFailureMessagePatterns": [DISRUPTION_MESSAGE_PATTERN],
        },
        {
            "name": "FailOnCommandError",
            "action": "FailJobSet",
            "onJobFailureReasons": ["PodFailurePolicy"],
        },
    ]


def _annotations(info: RuntimeInfo, job: TrainJob) -> dict[str, str]:
    """The runtime template's annotations, then the TrainJob's (which win)."""
    return {**(info.metadata.get("annotations") or {}), **(job.metadata.annotations or {})}


def _annotation_path(job: TrainJob, name: str) -> str:
    if name in (job.metadata.annotations or {}):
        return f"metadata.annotations[{name}]"
    return f"spec.runtimeRef.name (the runtime's template annotation {name})"


class Checkpoint:
    """Mounts the checkpoint volume and sets the restart policies."""

    name = "Checkpoint"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """A claim name, an absolute mount path, and no trainer env this plugin sets."""
        annotations = _annotations(info, job)
        claim = annotations.get(VOLUME_ANNOTATION)
        if claim is None:
            return []
        errors = reserved_env_errors(job, (CHECKPOINT_DIR_ENV, ATTEMPT_ENV), "checkpoint")
        if len(claim) > 253 or not _CLAIM_NAME.fullmatch(claim):
            errors.append(
                FieldError(
                    _annotation_path(job, VOLUME_ANNOTATION),
                    "expected a PersistentVolumeClaim name (a lowercase DNS subdomain), "
                    f"got {claim!r}",
                )
            )
        mount_path = annotations.get(MOUNT_PATH_ANNOTATION, DEFAULT_MOUNT_PATH)
        if not mount_path.startswith("/") or ":" in mount_path:
            errors.append(
                FieldError(
                    _annotation_path(job, MOUNT_PATH_ANNOTATION),
                    f"expected an absolute path without ':', got {mount_path!r}",
                )
            )
        trainer = info.trainer_pod_set()
        if trainer is None:
            errors.append(
                FieldError(
                    _annotation_path(job, VOLUME_ANNOTATION),
                    f"{info.runtime_kind} {info.runtime_name!r} has no trainer step to mount "
                    "the checkpoint volume in",
                )
            )
        elif any(volume.get("name") == VOLUME_NAME for volume in trainer.volumes):
            errors.append(
                FieldError(
                    _annotation_path(job, VOLUME_ANNOTATION),
                    f"the trainer pods already have a volume named {VOLUME_NAME!r}",
                )
            )
        return errors

    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        """The volume, mount and env on the trainer; the restart policies."""
        annotations = _annotations(info, job)
        claim = annotations.get(VOLUME_ANNOTATION)
        if claim is not None:
            _mount(info, claim, annotations.get(MOUNT_PATH_ANNOTATION, DEFAULT_MOUNT_PATH))
        if claim is not None or _asks_for_restarts(info):
            _restart_policies(info)


def _mount(info: RuntimeInfo, claim: str, mount_path: str) -> None:
    trainer = info.trainer_pod_set()
    container = info.trainer_container()
    if trainer is None or container is None:
        return
    podspecs.upsert_volume(
        trainer.pod_spec, {"name": VOLUME_NAME, "persistentVolumeClaim": {"claimName": claim}}
    )
    podspecs.upsert_volume_mount(container, {"name": VOLUME_NAME, "mountPath": mount_path})
    directory = f"{mount_path.rstrip('/')}/{info.job_name}"
    podspecs.upsert_env(
        container,
        [
            podspecs.value_env(CHECKPOINT_DIR_ENV, directory),
            podspecs.field_ref_env(ATTEMPT_ENV, f"metadata.labels['{RESTART_ATTEMPT_LABEL}']"),
        ],
    )


def _asks_for_restarts(info: RuntimeInfo) -> bool:
    return "failurePolicy" in info.spec


def _restart_policies(info: RuntimeInfo) -> None:
    """Pod failure policies on the Jobs that have none, JobSet rules unless it has some."""
    failure_policy = info.spec.setdefault("failurePolicy", {})
    if failure_policy.get("rules"):
        return  # the runtime's own rules decide
    failure_policy["rules"] = restart_rules()
    for pod_set in info.pod_sets:
        job_spec = pod_set.job.setdefault("template", {}).setdefault("spec", {})
        pod_spec = pod_set.pod_spec
        if "podFailurePolicy" in job_spec or pod_spec.get("restartPolicy") not in (None, "Never"):
            continue
        pod_spec["restartPolicy"] = "Never"
        job_spec["podFailurePolicy"] = pod_failure_policy()
