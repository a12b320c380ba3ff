"""Admission: a (TrainJob, runtime) pair checked once, into the frozen value ``build`` consumes.

``admit`` does what the API server and the admission webhook do to a TrainJob, once: it fills in
the API defaults of the job and its runtime, collects every field error (``trainer_api``'s rules,
the runtime plugins' rules, the runtimePatches change refused while the JobSet runs), computes
the runtime info the plugins will work on, and lists the warnings (a deprecated runtime). The
result, an ``Admission``, is what ``build`` and ``render`` take: they never default, parse or
validate again. The admission webhook (``trainer-controller``) denies on its errors; the SDK's
local backend raises them; the operator builds a stored job from it.

The runtime a job is admitted against is its runtime snapshot once one exists (``observed``):
editing or deleting a runtime never changes a job built from it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import trainer_api
from trainer_api import FieldError, JobSet, TrainJob, TrainJobStatus

from trainer_runtime import framework
from trainer_runtime.errors import BuildError, InvalidTrainJobError
from trainer_runtime.info import RuntimeInfo, runtime_info
from trainer_runtime.inputs import Runtime, parse_runtime
from trainer_runtime.manifests import to_doc
from trainer_runtime.plan import Observed
from trainer_runtime.registry import PLUGINS
from trainer_runtime.snapshot import from_snapshot, snapshot_name

__all__ = [
    "LABEL_SUPPORT",
    "RUNTIME_DEPRECATION_POLICY_URL",
    "SUPPORT_DEPRECATED",
    "WEBHOOK_VALIDATION_LABEL",
    "Admission",
    "admit",
    "deprecation_warnings",
    "needs_jobset",
    "runtime_patch_errors",
]

LABEL_SUPPORT: Final = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED: Final = "deprecated"
RUNTIME_DEPRECATION_POLICY_URL: Final = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)
WEBHOOK_VALIDATION_LABEL: Final = "trainer.kubeflow.org/webhook-validation"


@dataclass(frozen=True)
class Admission:
    """A TrainJob admitted against its runtime.

    ``job``: API-defaulted (with the status it had when admitted; ``with_status`` replaces it).
    ``runtime``: API-defaulted; the job's snapshot's once it has one; None when neither exists.
    ``errors``: every field error, collected (empty: admitted).
    ``warnings``: what the admission webhook warns (a deprecated runtime).
    ``refusal``: why the job cannot be built though no field is wrong (its runtime is missing,
    is not the one ``runtimeRef`` names, or has no replicated job); None when it can be.
    ``info``: the runtime info the plugins start from (None with errors or a refusal); ``build``
    works on a copy, so the value stays as admitted.
    """

    job: TrainJob
    runtime: Runtime | None
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = ()
    refusal: BuildError | None = None
    info: RuntimeInfo | None = field(default=None, repr=False, compare=False)

    @property
    def error(self) -> BuildError | None:
        """Why the job cannot be built: its field errors first, else the refusal; None when it
        can be."""
        return InvalidTrainJobError(self.errors) if self.errors else self.refusal

    def raise_errors(self) -> Admission:
        """This admission; InvalidTrainJobError with every field error when there are any."""
        if self.errors:
            raise InvalidTrainJobError(self.errors)
        return self

    def fresh_info(self) -> RuntimeInfo:
        """A copy of the runtime info for the plugins to change; the ``error`` when there is
        none."""
        if self.info is None:
            raise self.error or BuildError("the job was admitted without a runtime")
        return copy.deepcopy(self.info)

    def with_status(self, status: TrainJobStatus | None) -> Admission:
        """The same admission of the job as it is now: with ``status`` (a driver's last one)."""
        return dataclasses.replace(self, job=self.job.model_copy(update={"status": status}))


def admit(
    job: TrainJob,
    runtime: Runtime | None,
    *,
    old: TrainJob | None = None,
    observed: Observed | None = None,
    plugins: Sequence[object] = PLUGINS,
) -> Admission:
    """Admit a TrainJob create (``old`` None) or update against ``runtime``, the runtime its
    ``runtimeRef`` names (None when not found).

    ``observed``: the job's objects as they are: its runtime snapshot, which replaces
    ``runtime`` once it exists, and its JobSet (a suspended job's runtimePatches may not change
    while the JobSet has active pods). A runtime labelled
    ``trainer.kubeflow.org/webhook-validation: disabled`` skips the rules that check the job
    against the runtime, as upstream's admission webhook does; the plugins' rules report one
    message per field, ``trainer_api``'s first.
    """
    observed = observed or Observed()
    job = trainer_api.apply_defaults(job)
    old = trainer_api.apply_defaults(old) if old is not None else None
    refusal: BuildError | None = None
    try:
        runtime = _snapshot_runtime(job, observed) or runtime
    except BuildError as error:
        runtime, refusal = None, error
    if runtime is not None:
        runtime = trainer_api.apply_defaults(runtime)
    checked_against = _checked_against(runtime) if runtime is not None else None
    errors = trainer_api.validate(job, old=old, runtime=checked_against)
    info = None
    if runtime is None:
        refusal = refusal or _not_found(job)
    else:
        try:
            _check_runtime_ref(job, runtime)
            info = runtime_info(job, runtime)
        except BuildError as error:
            refusal = error
        else:
            reported = {error.field for error in errors}
            errors += [
                error
                for error in framework.field_errors(info, job, plugins)
                if error.field not in reported
            ]
    errors += runtime_patch_errors(job, old, observed.jobset)
    return Admission(
        job=job,
        runtime=runtime,
        errors=tuple(errors),
        warnings=tuple(deprecation_warnings(runtime)) if runtime is not None else (),
        refusal=refusal,
        info=None if errors or refusal else info,
    )


def _snapshot_runtime(job: TrainJob, observed: Observed) -> Runtime | None:
    """The runtime in the job's snapshot ConfigMap, if ``observed`` holds it."""
    snapshot = observed.find("ConfigMap", snapshot_name(job.metadata.name or ""))
    return parse_runtime(from_snapshot(snapshot)) if snapshot is not None else None


def _not_found(job: TrainJob) -> BuildError:
    ref = job.spec.runtime_ref
    return BuildError(
        f"{ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND} {ref.name!r} not found: "
        "create it, or point spec.runtimeRef at an existing runtime"
    )


def _check_runtime_ref(job: TrainJob, runtime: Runtime) -> None:
    """Raise BuildError unless ``runtime`` is the one ``job.spec.runtimeRef`` names."""
    ref = job.spec.runtime_ref
    kind = ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND
    name = runtime.metadata.name
    if runtime.kind != kind or name != ref.name:
        raise BuildError(
            f"spec.runtimeRef names {kind} {ref.name!r}, "
            f"but the runtime given is {runtime.kind} {name!r}"
        )


def _checked_against(runtime: Runtime) -> Runtime | None:
    """``runtime``, or None when it is labelled to skip the job-against-runtime rules."""
    labels = runtime.metadata.labels or {}
    return None if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled" else runtime


def deprecation_warnings(runtime: Runtime | Mapping[str, Any]) -> list[str]:
    """Upstream's warning when ``runtime`` (typed, or a manifest dict the webhook has not
    parsed) is labelled deprecated."""
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
    job: TrainJob,
    old: TrainJob | None,
    jobset: JobSet | Mapping[str, Any] | None,
) -> list[FieldError]:
    """One error per replicated job of ``jobset`` with active pods, when an update of a TrainJob
    suspended before or after it changes ``spec.runtimePatches`` (the JobSet's status is read
    as a dict, as ``Observed.jobset``)."""
    if old is None or jobset is None or not _patches_of_suspended_job_changed(job, old):
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


def _patches_of_suspended_job_changed(job: TrainJob, old: TrainJob) -> bool:
    suspended = bool(job.spec.suspend) or bool(old.spec.suspend)
    return suspended and (job.spec.runtime_patches or []) != (old.spec.runtime_patches or [])


def needs_jobset(job: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether admitting the update of ``old`` to ``job`` (the webhook's manifest dicts, before
    parsing) needs the JobSet: a suspended job's runtimePatches changed."""
    if old is None:
        return False
    spec, old_spec = job.get("spec") or {}, old.get("spec") or {}
    suspended = bool(spec.get("suspend")) or bool(old_spec.get("suspend"))
    return suspended and (spec.get("runtimePatches") or []) != (
        old_spec.get("runtimePatches") or []
    )
