"""The schema rules of OptimizationJob (upstream's CEL rules and bounds), for ``_rules``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from trainer_api._base import ApiModel
from trainer_api._fieldspec import FieldSpec, Rule
from trainer_api._optimization import (
    CategoricalSpace,
    LogUniformSpace,
    Objective,
    OptimizationJob,
    OptimizationJobSpec,
    OptimizationJobStatus,
    OptimizationResult,
    Parameter,
    ParameterAssignment,
    SearchAlgorithm,
    SearchSpace,
    TrainJobTemplateSpec,
    UniformSpace,
)

__all__ = ["OPTIMIZATION_CLASS_RULES", "OPTIMIZATION_FIELD_SPECS"]

DOUBLE: Final = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
SPEC_IS_IMMUTABLE: Final = "OptimizationJobSpec is immutable and cannot be updated after creation"


def _double(text: str) -> float | None:
    """CEL's ``double(text)``; None where the pattern rule already reports the text."""
    try:
        return float(text)
    except ValueError:
        return None


def _min_below_max(space: UniformSpace | LogUniformSpace) -> bool:
    low, high = _double(space.min), _double(space.max)
    return low is None or high is None or low < high


def _min_positive(space: LogUniformSpace) -> bool:
    low = _double(space.min)
    return low is None or low > 0.0


def _exactly_one(*values: object) -> bool:
    return sum(value is not None for value in values) == 1


def _parallel_within_trials(spec: OptimizationJobSpec) -> bool:
    # The API server checks the defaulted object: both default to 1.
    return (spec.parallel_trials or 1) <= (spec.num_trials or 1)


def _grid_is_categorical(spec: OptimizationJobSpec) -> bool:
    grid = spec.search_algorithm is not None and spec.search_algorithm.grid is not None
    return not grid or all(p.search_space.categorical is not None for p in spec.parameters)


_MIN_BELOW_MAX: Final = Rule(
    "double(self.min) < double(self.max)", "min must be strictly less than max", _min_below_max
)
_BOUND: Final = FieldSpec(min_length=1, max_length=64, pattern=DOUBLE)
_SPACE: Final = {"min": _BOUND, "max": _BOUND, "type": FieldSpec(default="Float")}
_TRIALS: Final = FieldSpec(minimum=1, maximum=100, default=1)

OPTIMIZATION_CLASS_RULES: Final[Mapping[type[ApiModel], tuple[Rule, ...]]] = {
    OptimizationJobSpec: (
        Rule(
            "self.parallelTrials <= self.numTrials",
            "parallelTrials cannot exceed numTrials",
            _parallel_within_trials,
        ),
        Rule(
            "!has(self.searchAlgorithm.grid) || "
            "self.parameters.all(p, has(p.searchSpace.categorical))",
            "Grid search requires all parameters to be Categorical; Uniform and LogUniform are "
            "not supported.",
            _grid_is_categorical,
        ),
    ),
    SearchAlgorithm: (
        Rule(
            "[has(self.random),has(self.grid)].filter(x,x==true).size() == 1",
            "exactly one of the fields in [random grid] must be set",
            lambda algorithm: _exactly_one(algorithm.random, algorithm.grid),
        ),
    ),
    SearchSpace: (
        Rule(
            "[has(self.uniform),has(self.logUniform),has(self.categorical)]"
            ".filter(x,x==true).size() == 1",
            "exactly one of the fields in [uniform logUniform categorical] must be set",
            lambda space: _exactly_one(space.uniform, space.log_uniform, space.categorical),
        ),
    ),
    UniformSpace: (_MIN_BELOW_MAX,),
    LogUniformSpace: (
        Rule("double(self.min) > 0.0", "min must be strictly greater than 0", _min_positive),
        _MIN_BELOW_MAX,
    ),
}
"""Rules on whole OptimizationJob objects, by model."""

OPTIMIZATION_FIELD_SPECS: Final[Mapping[type[ApiModel], Mapping[str, FieldSpec]]] = {
    OptimizationJob: {"spec": FieldSpec(immutable=SPEC_IS_IMMUTABLE)},
    OptimizationJobSpec: {
        "objectives": FieldSpec(min_items=1, max_items=1, list_type="map", map_keys=("metric",)),
        "search_algorithm": FieldSpec(default={"random": {}}),
        "parameters": FieldSpec(min_items=1, max_items=100, list_type="map", map_keys=("name",)),
        "num_trials": _TRIALS,
        "parallel_trials": _TRIALS,
    },
    Objective: {
        "metric": FieldSpec(min_length=1, max_length=64),
        "direction": FieldSpec(default="Minimize"),
    },
    Parameter: {"name": FieldSpec(min_length=1, max_length=64)},
    UniformSpace: _SPACE,
    LogUniformSpace: _SPACE,
    CategoricalSpace: {
        "choices": FieldSpec(min_items=1, max_items=100, item_max_length=64, list_type="set")
    },
    TrainJobTemplateSpec: {
        "metadata": FieldSpec(
            rules=(
                Rule(
                    "!has(self.name) && !has(self.namespace)",
                    "name and namespace cannot be set in a template.",
                    lambda meta: meta.name is None and meta.namespace is None,
                ),
            )
        )
    },
    OptimizationJobStatus: {
        "conditions": FieldSpec(max_items=100, list_type="map", map_keys=("type",))
    },
    OptimizationResult: {
        "train_job_name": FieldSpec(min_length=1, max_length=63),
        "parameters": FieldSpec(max_items=100, list_type="map", map_keys=("name",)),
    },
    ParameterAssignment: {
        "name": FieldSpec(min_length=1, max_length=64),
        "value": FieldSpec(min_length=1, max_length=64),
    },
}
"""Constraints of OptimizationJob fields, by model and attribute name."""
