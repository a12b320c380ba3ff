"""From a TrainJob and its runtime to the objects that run it (no lifecycle, no status)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import trainer_api
from trainer_api import FieldError

from trainer_runtime import constants, framework
from trainer_runtime.errors import BuildError, InvalidTrainJobError
from trainer_runtime.info import runtime_info
from trainer_runtime.manifests import to_doc
from trainer_runtime.plan import Observed
from trainer_runtime.registry import PLUGINS
from trainer_runtime.settings import Settings
from trainer_runtime.snapshot import to_snapshot

WEBHOOK_VALIDATION_LABEL: Final = "trainer.kubeflow.org/webhook-validation"

__all__ = ["WEBHOOK_VALIDATION_LABEL", "admit", "check_runtime_ref", "render", "validate"]


def check_runtime_ref(job: Mapping[str, Any], runtime: Mapping[str, Any]) -> None:
    """Raise BuildError unless ``runtime`` is the one ``job.spec.runtimeRef`` names."""
    ref = (job.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or constants.CLUSTER_TRAINING_RUNTIME_KIND
    name = (runtime.get("metadata") or {}).get("name")
    if runtime.get("kind") != kind or name != ref.get("name"):
        raise BuildError(
            f"spec.runtimeRef names {kind} {ref.get('name')!r}, "
            f"but the runtime given is {runtime.get('kind')} {name!r}"
        )


def validate(job: Any, runtime: Any, plugins: Sequence[object] = PLUGINS) -> list[Any]:
    """The plugins' FieldErrors for ``job`` against ``runtime`` (typed models or manifest dicts)."""
    job_doc = to_doc(job)
    return framework.field_errors(runtime_info(job_doc, to_doc(runtime)), job_doc, plugins)


def admit(job: Any, runtime: Any) -> tuple[Any, Any]:
    """``job`` and ``runtime`` (trainer_api models) defaulted as the API server defaults them;
    InvalidTrainJobError with every field error trainer_api finds in either.

    A runtime labelled ``trainer.kubeflow.org/webhook-validation: disabled`` skips the rules
    that check the job against the runtime, as upstream's admission webhook does.
    """
    job, runtime = trainer_api.apply_defaults(job), trainer_api.apply_defaults(runtime)
    errors = [
        FieldError(f"{runtime.kind}.{error.field}", error.message)
        for error in trainer_api.validate(runtime)
    ]
    labels = runtime.metadata.labels or {}
    checked_against = None if labels.get(WEBHOOK_VALIDATION_LABEL) == "disabled" else runtime
    errors += trainer_api.validate(job, runtime=checked_against)
    if errors:
        raise InvalidTrainJobError(errors)
    return job, runtime


def render(
    job: Any,
    runtime: Any,
    observed: Observed | None = None,
    settings: Settings | None = None,
    plugins: Sequence[object] = PLUGINS,
    *,
    snapshot: bool = True,
) -> list[dict[str, Any]]:
    """The manifests for ``job`` built from ``runtime``: the runtime snapshot ConfigMap, then the
    plugins' objects in registry order (JobSet last); ``snapshot=False`` leaves the snapshot out.
    Raises BuildError (InvalidTrainJobError for field errors)."""
    job_doc, runtime_doc = to_doc(job), to_doc(runtime)
    observed = observed or Observed()
    check_runtime_ref(job_doc, runtime_doc)
    info = runtime_info(job_doc, runtime_doc, settings)
    framework.run_validate(info, job_doc, plugins)
    framework.run_enforce(info, job_doc, plugins)
    objects = framework.run_build(info, job_doc, observed, plugins)
    return [to_snapshot(job_doc, runtime_doc), *objects] if snapshot else objects
