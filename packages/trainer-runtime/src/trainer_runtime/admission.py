"""Admission checks that need more than the two specs: runtime labels and the live JobSet.

Pure functions for the admission webhook (``trainer-controller``), ``trainer-controller render``
and the SDK's local backend alike:

- ``deprecation_warnings``: upstream's warning for a runtime labelled
  ``trainer.kubeflow.org/support: deprecated`` (a warning, never a denial).
- ``runtime_patch_errors``: a change to ``spec.runtimePatches`` of a suspended TrainJob is refused
  while its JobSet's replicated jobs still have active pods (the webhook reads the JobSet and
  passes it in; ``trainer_api.validate`` refuses the change of a job that stays unsuspended).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from trainer_api import FieldError, JobSet

from trainer_runtime.inputs import RuntimeInput, TrainJobInput, as_trainjob
from trainer_runtime.manifests import to_doc

__all__ = [
    "LABEL_SUPPORT",
    "RUNTIME_DEPRECATION_POLICY_URL",
    "SUPPORT_DEPRECATED",
    "deprecation_warnings",
    "needs_jobset",
    "runtime_patch_errors",
]

LABEL_SUPPORT: Final = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED: Final = "deprecated"
RUNTIME_DEPRECATION_POLICY_URL: Final = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)


def deprecation_warnings(runtime: RuntimeInput) -> list[str]:
    """Upstream's warning when ``runtime`` (typed or a manifest dict) is labelled deprecated."""
    doc = to_doc(runtime)  # not parsed: a warning must not fail on a runtime build would refuse
    metadata = doc.get("metadata") or {}
    if (metadata.get("labels") or {}).get(LABEL_SUPPORT) != SUPPORT_DEPRECATED:
        return []
    return [
        f'Referenced {doc.get("kind")} "{metadata.get("name")}" is deprecated and will be '
        "removed in a future release of Kubeflow Trainer. See runtime deprecation policy: "
        + RUNTIME_DEPRECATION_POLICY_URL
    ]


def runtime_patch_errors(
    job: TrainJobInput,
    old: TrainJobInput | None,
    jobset: JobSet | Mapping[str, Any] | None,
) -> list[FieldError]:
    """One error per replicated job of ``jobset`` with active pods, when an update of a TrainJob
    suspended before or after it changes ``spec.runtimePatches`` (models or manifest dicts; the
    JobSet's status is read as a dict, as ``Observed.jobset``)."""
    if old is None or jobset is None or not needs_jobset(job, old):
        return []
    return [
        FieldError(
            "spec.runtimePatches",
            "may not change while the JobSet's replicated job "
            f"{status.get('name')!r} is still active ({status.get('active')} active)",
        )
        for status in (to_doc(jobset).get("status") or {}).get("replicatedJobsStatus") or ()
        if int(status.get("active") or 0) > 0
    ]


def needs_jobset(job: TrainJobInput, old: TrainJobInput | None) -> bool:
    """Whether ``runtime_patch_errors`` needs the JobSet: a suspended job's patches changed."""
    if old is None:
        return False
    spec, old_spec = as_trainjob(job).spec, as_trainjob(old).spec
    suspended = bool(spec.suspend) or bool(old_spec.suspend)
    return suspended and (spec.runtime_patches or []) != (old_spec.runtime_patches or [])
