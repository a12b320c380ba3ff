"""From a TrainJob and its runtime to the objects that run it (no lifecycle, no status)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import trainer_api
from trainer_api import FieldError, TrainJob

from trainer_runtime import constants, framework
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

__all__ = ["WEBHOOK_VALIDATION_LABEL", "admit", "check_runtime_ref", "render", "validate"]


def check_runtime_ref(job: TrainJob, runtime: Runtime) -> None:
    """Raise BuildError unless ``runtime`` is the one ``job.spec.runtimeRef`` names."""
    ref = job.spec.runtime_ref
    kind = ref.kind or constants.CLUSTER_TRAINING_RUNTIME_KIND
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
    labels = typed_runtime.metadata.labels or {}
    checked_against = None if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled" else typed_runtime
    errors += trainer_api.validate(trainjob, runtime=checked_against)
    if errors:
        raise InvalidTrainJobError(errors)
    return trainjob, typed_runtime


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
