"""From a TrainJob and its runtime to the objects that run it (no lifecycle, no status)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import trainer_api
from trainer_api import FieldError, JobSet, TrainJob

from trainer_runtime import framework
from trainer_runtime.admission import runtime_patch_errors
from trainer_runtime.errors import BuildError, InvalidTrainJobError
from trainer_runtime.info import runtime_info
from trainer_runtime.inputs import (
    Runtime,
    RuntimeInput,
    TrainJobInput,
    as_runtime,
    as_trainjob,
    with_doc,
)
from trainer_runtime.plan import Observed
from trainer_runtime.registry import PLUGINS
from trainer_runtime.settings import Settings
from trainer_runtime.snapshot import to_snapshot

WEBHOOK_VALIDATION_LABEL: Final = "trainer.kubeflow.org/webhook-validation"

__all__ = [
    "WEBHOOK_VALIDATION_LABEL",
    "admission_errors",
    "admit",
    "check_runtime_ref",
    "render",
    "validate",
]


def check_runtime_ref(job: TrainJob, runtime: Runtime) -> None:
    """Raise BuildError unless ``runtime`` is the one ``job.spec.runtimeRef`` names."""
    ref = job.spec.runtime_ref
    kind = ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND
    name = runtime.metadata.name
    if runtime.kind != kind or name != ref.name:
        raise BuildError(
            f"spec.runtimeRef names {kind} {ref.name!r}, "
            f"but the runtime given is {runtime.kind} {name!r}"
        )


def validate(
    job: TrainJobInput, runtime: RuntimeInput, plugins: Sequence[object] = PLUGINS
) -> list[FieldError]:
    """The plugins' FieldErrors for ``job`` against ``runtime`` (typed models or manifest dicts);
    for a manifest dict that does not parse, its parse errors."""
    try:
        trainjob, typed_runtime = as_trainjob(job), as_runtime(runtime)
    except InvalidTrainJobError as error:
        return list(error.errors)
    return framework.field_errors(runtime_info(trainjob, typed_runtime), trainjob, plugins)


def admit(job: TrainJobInput, runtime: RuntimeInput) -> tuple[TrainJob, Runtime]:
    """``job`` and ``runtime`` defaulted as the API server defaults them;
    InvalidTrainJobError with every field error trainer_api finds in either.

    A runtime labelled ``trainer.kubeflow.org/webhook-validation: disabled`` skips the rules
    that check the job against the runtime, as upstream's admission webhook does.
    """
    trainjob = trainer_api.apply_defaults(as_trainjob(job))
    typed_runtime = trainer_api.apply_defaults(as_runtime(runtime))
    errors = [
        FieldError(f"{typed_runtime.kind}.{error.field}", error.message)
        for error in trainer_api.validate(typed_runtime)
    ]
    errors += trainer_api.validate(trainjob, runtime=_checked_against(typed_runtime))
    if errors:
        raise InvalidTrainJobError(errors)
    return trainjob, typed_runtime


def admission_errors(
    job: TrainJobInput,
    runtime: RuntimeInput | None,
    *,
    old: TrainJobInput | None = None,
    jobset: JobSet | Mapping[str, Any] | None = None,
    plugins: Sequence[object] = PLUGINS,
) -> list[FieldError]:
    """Every field error of a TrainJob create (``old`` None) or update, as the admission webhook
    denies it and the SDK's local backend raises it: ``trainer_api``'s rules (against
    ``runtime`` unless that is labelled webhook-validation disabled), the runtime plugins' rules
    (one message per field: trainer_api's first), and the runtimePatches change refused while
    ``jobset`` has active pods. ``job``, ``old`` and ``runtime`` are API-defaulted first."""
    trainjob = trainer_api.apply_defaults(as_trainjob(job))
    typed_old = trainer_api.apply_defaults(as_trainjob(old)) if old is not None else None
    typed_runtime = trainer_api.apply_defaults(as_runtime(runtime)) if runtime is not None else None
    checked_against = _checked_against(typed_runtime) if typed_runtime is not None else None
    errors = trainer_api.validate(trainjob, old=typed_old, runtime=checked_against)
    if typed_runtime is not None:
        reported = {error.field for error in errors}
        errors += [
            error
            for error in validate(trainjob, typed_runtime, plugins)
            if error.field not in reported
        ]
    return errors + runtime_patch_errors(trainjob, typed_old, jobset)


def _checked_against(runtime: Runtime) -> Runtime | None:
    """``runtime``, or None when it is labelled to skip the job-against-runtime rules."""
    labels = runtime.metadata.labels or {}
    return None if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled" else runtime


def render(
    job: TrainJobInput,
    runtime: RuntimeInput,
    observed: Observed | None = None,
    settings: Settings | None = None,
    plugins: Sequence[object] = PLUGINS,
    *,
    snapshot: bool = True,
) -> list[dict[str, Any]]:
    """The manifests for ``job`` built from ``runtime`` (typed models or manifest dicts): the
    runtime snapshot ConfigMap, then the plugins' objects in registry order (JobSet last);
    ``snapshot=False`` leaves the snapshot out. Raises BuildError (InvalidTrainJobError for
    field errors, also for a manifest dict that does not parse)."""
    trainjob, typed_runtime = as_trainjob(job), as_runtime(runtime)
    runtime_doc = with_doc(typed_runtime, runtime)
    observed = observed or Observed()
    check_runtime_ref(trainjob, typed_runtime)
    info = runtime_info(trainjob, typed_runtime, settings, runtime_doc=runtime_doc)
    framework.run_validate(info, trainjob, plugins)
    framework.run_enforce(info, trainjob, plugins)
    objects = framework.run_build(info, trainjob, observed, plugins)
    return [to_snapshot(trainjob, runtime_doc), *objects] if snapshot else objects
