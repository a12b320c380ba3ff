"""A trial's TrainJob from its OptimizationJob's template, with its parameters applied as
KEP-3562 says: ``KUBEFLOW_TRAINER_OPT_<NAME>`` env in ``spec.trainer.env`` and the assignment
as an annotation; owned by the OptimizationJob. Used by the controller and the local optimizer."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import trainer_api
from trainer_api import OPTIMIZATION_JOB_LABEL, PARAMETERS_ANNOTATION, parameter_env_name

from trainer_search.space import Value, assignment_strings

__all__ = [
    "ENGINE_STATE_ANNOTATION",
    "PRUNED_ANNOTATION",
    "STEPS_ANNOTATION",
    "TRIAL_ANNOTATION",
    "StepsRecord",
    "read_steps",
    "trial_annotations",
    "trial_name",
    "trial_steps",
    "trial_trainjob",
]

_PREFIX: Final = f"optimization.{trainer_api.GROUP}"
TRIAL_ANNOTATION: Final = f"{_PREFIX}/trial"
"""On a trial TrainJob: its number in the OptimizationJob."""
ENGINE_STATE_ANNOTATION: Final = f"{_PREFIX}/engine-state"
"""On a trial TrainJob: what the search engine noted for it (JSON)."""
STEPS_ANNOTATION: Final = f"{_PREFIX}/steps"
"""The objective per step seen so far: ``{"seen": [...], "steps": {step: value}, "checked": n}``."""
PRUNED_ANNOTATION: Final = f"{_PREFIX}/pruned-at-step"
"""On a trial TrainJob the stopping rule ended: the step it was judged at."""


@dataclass(frozen=True)
class StepsRecord:
    """What ``STEPS_ANNOTATION`` holds: the objective per step, the report last recorded
    (``seen``: its time stamp) and the last step the stopping rule looked at (``checked``)."""

    seen: str | None = None
    steps: Mapping[int, float] = field(default_factory=dict)
    checked: int | None = None

    def to_annotation(self) -> str:
        """Strict JSON: a non-finite value (a diverged run) is written as its name, ``"nan"``,
        ``"inf"`` or ``"-inf"``, which ``float`` reads back."""
        steps = {
            str(step): value if math.isfinite(value) else repr(value)
            for step, value in sorted(self.steps.items())
        }
        return json.dumps(
            {"seen": self.seen, "steps": steps, "checked": self.checked},
            sort_keys=True,
            allow_nan=False,
        )


def read_steps(annotations: Mapping[str, str]) -> StepsRecord:
    """The steps record a trial carries (empty: none yet)."""
    history = json.loads(annotations.get(STEPS_ANNOTATION, "{}"))
    steps = {int(step): float(value) for step, value in (history.get("steps") or {}).items()}
    return StepsRecord(history.get("seen"), steps, history.get("checked"))


def trial_steps(annotations: Mapping[str, str]) -> dict[int, float]:
    """The objective per step recorded on a trial (empty: none yet)."""
    return dict(read_steps(annotations).steps)


def trial_name(job_name: str, number: int) -> str:
    """Trial ``number``'s TrainJob name: one name per number, so a trial is never made twice."""
    return f"{job_name}-{number}"


def trial_annotations(
    number: int, parameters: Mapping[str, Value], engine_state: Mapping[str, Any]
) -> dict[str, str]:
    """The annotations a trial starts with: its parameters (KEP-3562), number and engine note."""
    return {
        PARAMETERS_ANNOTATION: json.dumps(assignment_strings(parameters), sort_keys=True),
        TRIAL_ANNOTATION: str(number),
        ENGINE_STATE_ANNOTATION: json.dumps(dict(engine_state), sort_keys=True),
    }


def trial_trainjob(
    job: Mapping[str, Any],
    number: int,
    parameters: Mapping[str, Value],
    engine_state: Mapping[str, Any],
) -> dict[str, Any]:
    """Trial ``number`` of the OptimizationJob manifest ``job`` (which has its uid)."""
    metadata = job["metadata"]
    template = copy.deepcopy(job["spec"]["trainJobTemplate"])
    strings = assignment_strings(parameters)
    spec = template["spec"]
    trainer = spec.setdefault("trainer", {})
    names = {parameter_env_name(name) for name in strings}
    env = [item for item in trainer.get("env") or [] if item.get("name") not in names]
    trainer["env"] = env + [{"name": parameter_env_name(n), "value": v} for n, v in strings.items()]
    template_meta = template.get("metadata") or {}
    return {
        "apiVersion": trainer_api.TRAINER_API_VERSION,
        "kind": trainer_api.TRAIN_JOB_KIND,
        "metadata": {
            "name": trial_name(metadata["name"], number),
            "namespace": metadata.get("namespace"),
            "labels": {
                **(template_meta.get("labels") or {}),
                OPTIMIZATION_JOB_LABEL: metadata["name"],
            },
            "annotations": {
                **(template_meta.get("annotations") or {}),
                **trial_annotations(number, parameters, engine_state),
            },
            "ownerReferences": [
                {
                    "apiVersion": trainer_api.TRAINER_API_VERSION,
                    "kind": "OptimizationJob",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
