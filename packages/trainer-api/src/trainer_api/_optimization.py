"""OptimizationJob: hyperparameter search over trial TrainJobs (upstream's KEP-3562 schema).

What upstream's schema does not name travels in annotations (``ALGORITHM_ANNOTATION``,
``EARLY_STOPPING_ANNOTATION``): the CRD's structural schema prunes unknown fields, and an
annotation keeps a manifest valid for upstream's API server, which then runs plain random search.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._meta import Condition, ListMeta, ObjectMeta
from trainer_api._trainjob import TrainJobSpec
from trainer_api._types import Int32, Int64
from trainer_api._wellknown import GROUP

__all__ = [
    "ALGORITHM_ANNOTATION",
    "EARLY_STOPPING_ANNOTATION",
    "EXTRA_ALGORITHMS",
    "MAX_FAILED_TRIALS_ANNOTATION",
    "OPTIMIZATION_JOB_LABEL",
    "PARAMETERS_ANNOTATION",
    "PARAMETER_ENV_PREFIX",
    "SUSPEND_ANNOTATION",
    "WARM_START_ANNOTATION",
    "CategoricalSpace",
    "GridAlgorithm",
    "LogUniformSpace",
    "Objective",
    "OptimizationJob",
    "OptimizationJobList",
    "OptimizationJobSpec",
    "OptimizationJobStatus",
    "OptimizationResult",
    "Parameter",
    "ParameterAssignment",
    "RandomAlgorithm",
    "SearchAlgorithm",
    "SearchSpace",
    "TrainJobTemplateSpec",
    "UniformSpace",
    "parameter_env_name",
]

ALGORITHM_ANNOTATION: Final = f"optimization.{GROUP}/algorithm"
"""An algorithm upstream's ``searchAlgorithm`` has no field for: one of ``EXTRA_ALGORITHMS``.
It replaces ``random`` (whose ``seed`` it uses); upstream's controller would run random search."""
EXTRA_ALGORITHMS: Final = ("tpe", "cmaes", "qmc")
EARLY_STOPPING_ANNOTATION: Final = f"optimization.{GROUP}/early-stopping"
"""A JSON stopping rule over each trial's per-step objective, e.g. ``{"rule": "asha"}``."""
MAX_FAILED_TRIALS_ANNOTATION: Final = f"optimization.{GROUP}/max-failed-trials"
"""How many trials may fail before the job fails (a decimal integer); unset: any number."""
SUSPEND_ANNOTATION: Final = f"optimization.{GROUP}/suspend"
"""``"true"``: no new trials start and running ones are suspended; removing it resumes (the spec
is immutable, so suspension lives in metadata)."""
WARM_START_ANNOTATION: Final = f"optimization.{GROUP}/warm-start"
"""The name of an earlier OptimizationJob in the same namespace: its finished trials that lie in
this job's space seed the search (they count for the sampler, not towards ``numTrials``)."""
PARAMETERS_ANNOTATION: Final = f"optimization.{GROUP}/parameters"
"""On a trial TrainJob: its parameter assignment as a JSON object (KEP-3562)."""
OPTIMIZATION_JOB_LABEL: Final = f"{GROUP}/optimization-job"
"""On a trial TrainJob: the name of its OptimizationJob."""
PARAMETER_ENV_PREFIX: Final = "KUBEFLOW_TRAINER_OPT_"
"""A trial's parameter ``lr`` reaches its trainer as ``KUBEFLOW_TRAINER_OPT_LR`` (KEP-3562)."""


def parameter_env_name(name: str) -> str:
    """``learning-rate`` -> ``KUBEFLOW_TRAINER_OPT_LEARNING_RATE``."""
    return PARAMETER_ENV_PREFIX + "".join(c if c.isalnum() else "_" for c in name.upper())


class Objective(ApiModel):
    """The metric to optimize and its direction."""

    metric: str
    direction: Literal["Maximize", "Minimize"] | None = None


class RandomAlgorithm(ApiModel):
    """Random search; ``seed`` makes it reproducible."""

    seed: Int64 | None = None


class GridAlgorithm(ApiModel):
    """Grid search over categorical parameters."""


class SearchAlgorithm(ApiModel):
    """How the next trials' parameters are chosen."""

    random: RandomAlgorithm | None = None
    grid: GridAlgorithm | None = None


class UniformSpace(ApiModel):
    """Uniform distribution between min and max (decimal strings)."""

    min: str
    max: str
    type: Literal["Int", "Float"] | None = None


class LogUniformSpace(ApiModel):
    """Log-uniform distribution between min and max (decimal strings, min > 0)."""

    min: str
    max: str
    type: Literal["Int", "Float"] | None = None


class CategoricalSpace(ApiModel):
    """A choice among strings."""

    choices: list[str]


class SearchSpace(ApiModel):
    """Exactly one distribution."""

    uniform: UniformSpace | None = None
    log_uniform: LogUniformSpace | None = None
    categorical: CategoricalSpace | None = None


class Parameter(ApiModel):
    """One hyperparameter and its search space."""

    name: str
    search_space: SearchSpace


class ParameterAssignment(ApiModel):
    """A hyperparameter and the value a trial got."""

    name: str
    value: str


class TrainJobTemplateSpec(ApiModel):
    """The TrainJob each trial runs (metadata without name and namespace)."""

    metadata: ObjectMeta | None = None
    spec: TrainJobSpec


class OptimizationJobSpec(ApiModel):
    """The spec of an OptimizationJob."""

    objectives: list[Objective]
    search_algorithm: SearchAlgorithm | None = None
    parameters: list[Parameter]
    num_trials: Int32 | None = None
    parallel_trials: Int32 | None = None
    train_job_template: TrainJobTemplateSpec


class OptimizationResult(ApiModel):
    """The best trial so far."""

    train_job_name: str
    parameters: list[ParameterAssignment] | None = None


class OptimizationJobStatus(ApiModel):
    """The observed state of an OptimizationJob."""

    conditions: list[Condition] | None = None
    result: OptimizationResult | None = None


class OptimizationJob(KubernetesObject):
    """An OptimizationJob object."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["OptimizationJob"] = "OptimizationJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: OptimizationJobSpec
    status: OptimizationJobStatus | None = None


class OptimizationJobList(KubernetesObject):
    """A list of OptimizationJobs."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["OptimizationJobList"] = "OptimizationJobList"
    metadata: ListMeta | None = None
    items: list[OptimizationJob] = Field(default_factory=list)
