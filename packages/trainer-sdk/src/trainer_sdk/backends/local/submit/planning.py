"""The local backend's use of the runtime framework at submit: the job admitted once
(``manifests.admission``), then the same ``build`` the operator calls; the Plan's objects come
back as the manifest dicts the rest of the backend runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trainer_sdk.errors import InvalidTrainJobError
from trainer_sdk.manifests.admission import admit

if TYPE_CHECKING:
    from trainer_api import ClusterTrainingRuntime, TrainingRuntime, TrainJob
    from trainer_runtime import Admission

__all__ = [
    "Planned",
    "builtin_runtime_manifests",
    "plan_trainjob",
]


def _to_doc(obj: Any) -> dict[str, Any]:
    return dict(obj) if isinstance(obj, Mapping) else obj.to_dict()


def builtin_runtime_manifests() -> dict[str, dict[str, Any]]:
    """The built-in ClusterTrainingRuntimes, by name, as manifests."""
    import trainer_runtime

    return {name: _to_doc(runtime) for name, runtime in trainer_runtime.builtin_runtimes().items()}


@dataclass(frozen=True)
class Planned:
    """What a submit stores: the job and its runtime as admitted (API-defaulted, as a cluster
    holds them), the JobSet of the Plan, and its other objects (snapshot ConfigMap, Secrets)."""

    trainjob: dict[str, Any]
    runtime: dict[str, Any]
    jobset: dict[str, Any]
    others: list[dict[str, Any]]


def plan_trainjob(
    job: TrainJob, runtime: TrainingRuntime | ClusterTrainingRuntime, now: datetime
) -> Planned:
    """Admit the TrainJob against its runtime, as the API server and its admission webhook would,
    once (defaulted, every rule checked, the runtime info computed; InvalidTrainJobError with
    every field error), and build the objects that run it."""
    import trainer_api
    import trainer_runtime

    if runtime.spec.ml_policy is not None and runtime.spec.ml_policy.flux is not None:
        # Its pods get Flux from an init container and start brokers that find each other by
        # host name: nothing this backend runs.
        raise InvalidTrainJobError(
            [
                trainer_api.FieldError(
                    "spec.runtimeRef.name",
                    f"{runtime.kind} {runtime.metadata.name!r} uses mlPolicy.flux, which "
                    "the local backend cannot run; submit the TrainJob to a Kubernetes cluster",
                )
            ]
        )
    admission = admit(job, runtime)
    built = trainer_runtime.build(admission, trainer_runtime.Observed(), now)
    if built.error is not None:
        raise InvalidTrainJobError([trainer_api.FieldError("", str(built.error))])
    return _planned(admission, built.apply)


def _planned(admission: Admission, objects: Sequence[Mapping[str, Any]]) -> Planned:
    jobsets = [dict(obj) for obj in objects if obj.get("kind") == "JobSet"]
    if len(jobsets) != 1:
        raise RuntimeError(
            f"the runtime framework planned {len(jobsets)} JobSets; expected exactly one"
        )
    assert admission.runtime is not None  # built: it has one
    return Planned(
        trainjob=admission.job.to_dict(),
        runtime=admission.runtime.to_dict(),
        jobset=jobsets[0],
        others=[dict(obj) for obj in objects if obj.get("kind") != "JobSet"],
    )
