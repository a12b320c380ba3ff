"""Between the SDK's arguments and an OptimizationJob (upstream's schema): one definition for
both backends, validated by trainer-api, read by the same search core. ``requested_job`` is
``optimize()``'s one front door: every argument check happens there, for both backends."""

from __future__ import annotations

import json
import os
import random
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainer_api import (
    ALGORITHM_ANNOTATION,
    EARLY_STOPPING_ANNOTATION,
    MAX_FAILED_TRIALS_ANNOTATION,
    WARM_START_ANNOTATION,
    OptimizationJob,
    apply_defaults,
    early_stopping,
    max_failed_trials,
    parameter_env_name,
    parse,
    search_algorithm,
    validate,
)
from trainer_search import study_from_job, value_types

from trainer_sdk import types
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest, command_for_function
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.types.algorithm_types import (
    SEEDED_ALGORITHMS,
    BaseAlgorithm,
    BaseEarlyStopping,
    GridSearch,
    MedianStopping,
    RandomSearch,
    SeededAlgorithm,
    SuccessiveHalving,
)
from trainer_sdk.optimizer.types.optimization_types import Direction, Objective, TrialConfig
from trainer_sdk.optimizer.types.search_types import (
    CategoricalSearchSpace,
    ContinuousSearchSpace,
    Distribution,
)
from trainer_sdk.training.engines import trl_names, trl_search

if TYPE_CHECKING:
    from trainer_sdk.backends.base import RuntimeBackend

__all__ = ["Definition", "definition_of", "new_name", "optimization_job", "requested_job"]

SearchSpace = dict[str, ContinuousSearchSpace | CategoricalSearchSpace]


@dataclass
class Definition:
    """What an OptimizationJob asks for, in the SDK's types."""

    search_space: SearchSpace
    objectives: list[Objective]
    algorithm: BaseAlgorithm
    trial_config: TrialConfig
    early_stopping: BaseEarlyStopping | None
    warm_start: str | None = None

    @classmethod
    def requested(
        cls,
        search_space: SearchSpace,
        trial_config: TrialConfig | None,
        objectives: list[Objective] | None,
        algorithm: BaseAlgorithm | None,
        early_stopping: BaseEarlyStopping | None,
        warm_start: str | None = None,
    ) -> Definition:
        """``optimize()``'s arguments with upstream's defaults (ValueError: no search space)."""
        if not search_space:
            raise ValueError("Search space must be set.")
        return cls(
            dict(search_space),
            list(objectives or [Objective()]),
            algorithm or RandomSearch(),
            trial_config or TrialConfig(),
            early_stopping,
            warm_start,
        )


def new_name() -> str:
    """A name like upstream's: a letter and 11 hex digits."""
    return random.choice(string.ascii_lowercase) + os.urandom(6).hex()[:11]


def _decimal(value: float | int) -> str:
    """A bound as the API's decimal string (``repr`` of a float round-trips)."""
    return str(value) if isinstance(value, int) else repr(float(value))


def _parameter(name: str, space: object) -> dict[str, Any]:
    if isinstance(space, CategoricalSearchSpace):
        return {
            "name": name,
            "searchSpace": {"categorical": {"choices": [str(c) for c in space.choices]}},
        }
    if isinstance(space, ContinuousSearchSpace):
        kind = "logUniform" if space.distribution is Distribution.LOG_UNIFORM else "uniform"
        bounds = {"min": _decimal(space.min), "max": _decimal(space.max)}
        return {"name": name, "searchSpace": {kind: bounds}}
    raise ValueError(
        f"search_space[{name!r}]: expected Search.uniform(), Search.loguniform() or "
        f"Search.choice(), got {space!r}"
    )


def optimization_job(
    name: str,
    definition: Definition,
    template: Mapping[str, Any],
    namespace: str | None = None,
) -> OptimizationJob:
    """The OptimizationJob for ``definition`` with ``template`` as its trainJobTemplate;
    ValueError lists every invalid field."""
    if not definition.search_space:
        raise ValueError("search_space: at least one parameter must be set")
    algorithm = definition.algorithm
    annotations: dict[str, str] = {}
    if isinstance(algorithm, GridSearch):
        search: dict[str, Any] = {"grid": {}}
    else:
        seed = algorithm.random_state if isinstance(algorithm, SeededAlgorithm) else None
        search = {"random": {} if seed is None else {"seed": seed}}
        if not isinstance(algorithm, RandomSearch):
            annotations[ALGORITHM_ANNOTATION] = algorithm.algorithm_name
    if (rule := definition.early_stopping) is not None:
        annotations[EARLY_STOPPING_ANNOTATION] = json.dumps(_stopping_fields(rule))
    config = definition.trial_config
    if config.max_failed_trials is not None:
        annotations[MAX_FAILED_TRIALS_ANNOTATION] = str(config.max_failed_trials)
    if definition.warm_start is not None:
        annotations[WARM_START_ANNOTATION] = definition.warm_start
    objective = definition.objectives[0]
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = annotations
    document = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.OPTIMIZATION_JOB_KIND,
        "metadata": metadata,
        "spec": {
            "objectives": [
                {"metric": objective.metric, "direction": objective.direction.value.capitalize()}
            ],
            "searchAlgorithm": search,
            "parameters": [
                _parameter(key, space) for key, space in definition.search_space.items()
            ],
            "numTrials": config.num_trials,
            "parallelTrials": config.parallel_trials,
            "trainJobTemplate": dict(template),
        },
    }
    job = apply_defaults(parse(document))
    assert isinstance(job, OptimizationJob)
    if errors := validate(job):
        raise ValueError("invalid optimization job:\n" + "\n".join(str(error) for error in errors))
    return job


def _stopping_fields(rule: BaseEarlyStopping) -> dict[str, Any]:
    if isinstance(rule, MedianStopping):
        return {
            "rule": "median",
            "startupTrials": rule.startup_trials,
            "warmupSteps": rule.warmup_steps,
        }
    if isinstance(rule, SuccessiveHalving):
        return {
            "rule": "asha",
            "minResource": rule.min_resource,
            "reductionFactor": rule.reduction_factor,
        }
    raise ValueError(f"early_stopping: expected MedianStopping or SuccessiveHalving, got {rule!r}")


def definition_of(job: OptimizationJob) -> Definition:
    """The SDK's view of an OptimizationJob (after defaulting)."""
    space: SearchSpace = {}
    for parameter in job.spec.parameters:
        search = parameter.search_space
        if search.categorical is not None:
            space[parameter.name] = CategoricalSearchSpace(list(search.categorical.choices))
            continue
        bounds = search.uniform or search.log_uniform
        assert bounds is not None  # validated: exactly one distribution
        kind = Distribution.LOG_UNIFORM if search.log_uniform is not None else Distribution.UNIFORM
        space[parameter.name] = ContinuousSearchSpace(float(bounds.min), float(bounds.max), kind)
    name = search_algorithm(job)
    seed = (
        job.spec.search_algorithm.random.seed
        if job.spec.search_algorithm and job.spec.search_algorithm.random
        else None
    )
    algorithm = GridSearch() if name == "grid" else SEEDED_ALGORITHMS[name](random_state=seed)
    objectives = [
        Objective(o.metric, Direction.MAXIMIZE if o.direction == "Maximize" else Direction.MINIMIZE)
        for o in job.spec.objectives
    ]
    config = TrialConfig(
        job.spec.num_trials or 1, job.spec.parallel_trials or 1, max_failed_trials(job)
    )
    rule = early_stopping(job)
    stopping: BaseEarlyStopping | None = None
    if rule is not None and rule.rule == "median":
        stopping = MedianStopping(rule.startup_trials, rule.warmup_steps)
    elif rule is not None:
        stopping = SuccessiveHalving(rule.min_resource, rule.reduction_factor)
    warm_start = (job.metadata.annotations or {}).get(WARM_START_ANNOTATION)
    return Definition(space, objectives, algorithm, config, stopping, warm_start)


def _builtin_search_errors(config: object, definition: Definition) -> list[str]:
    """What keeps a built-in trainer's trials from taking ``definition``'s search: each
    parameter must set a TRL setting and the objective be a metric the engine reports."""
    if not isinstance(config, types.TRLConfig):
        return [
            f"trial_template.trainer: a {type(config).__name__} trial does not read search "
            "parameters; expected BuiltinTrainer(TRLConfig(...)) or a CustomTrainer"
        ]
    errors = []
    setters: dict[str, str] = {}
    for name, space in definition.search_space.items():
        argument = trl_names.argument_name(name)
        if argument in setters:
            errors.append(
                f"search_space[{name!r}]: sets TRL's {argument}, as {setters[argument]!r} does; "
                "expected one parameter per setting"
            )
        setters.setdefault(argument, name)
        choices = (
            [str(choice) for choice in space.choices]
            if isinstance(space, CategoricalSearchSpace)
            else None
        )
        if (problem := trl_search.parameter_problem(config, name, choices)) is not None:
            errors.append(f"search_space[{name!r}]: {problem}")
    metric = definition.objectives[0].metric
    if (problem := trl_search.metric_problem(config, metric)) is not None:
        errors.append(f"objectives[0].metric {metric!r}: {problem}")
    return errors


def requested_job(
    backend: RuntimeBackend,
    name: str,
    trial_template: types.TrainJobTemplate,
    definition: Definition,
    namespace: str | None = None,
) -> OptimizationJob:
    """The OptimizationJob ``optimize()`` asks ``backend`` to run: each trial is
    ``trial_template``'s TrainJob; a ``CustomTrainer``'s function gets the trial's parameters as
    typed keyword arguments, read from its ``KUBEFLOW_TRAINER_OPT_<NAME>`` env (KEP-3562), so a
    trial runs the same on either backend. ValueError names every invalid argument."""
    trainer = trial_template.trainer
    if isinstance(trainer, types.BuiltinTrainer) and (
        errors := _builtin_search_errors(trainer.config, definition)
    ):
        raise ValueError("invalid search over a built-in trainer:\n" + "\n".join(errors))
    runtime = backend.resolve_runtime(trial_template.runtime)
    trainjob = build_trainjob_manifest(
        name, runtime, trainer, trial_template.initializer, (), backend
    )
    job = optimization_job(name, definition, {"spec": trainjob["spec"]}, namespace)
    if isinstance(trainer, types.CustomTrainer):
        env_args = {
            parameter: (parameter_env_name(parameter), kind)
            for parameter, kind in value_types(study_from_job(job).space).items()
        }
        document = job.to_dict()
        document["spec"]["trainJobTemplate"]["spec"]["trainer"]["command"] = command_for_function(
            runtime,
            trainer.func,
            trainer.func_args,
            trainer.pip_index_urls,
            trainer.packages_to_install,
            env_args,
        )
        parsed = parse(document)
        assert isinstance(parsed, OptimizationJob)
        job = parsed
    return job
