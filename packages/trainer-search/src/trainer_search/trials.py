"""A trial's TrainJob from its OptimizationJob's template, with its parameters applied as
KEP-3562 says: ``KUBEFLOW_TRAINER_OPT_<NAME>`` env in ``spec.trainer.env`` and the assignment
as an annotation; owned by the OptimizationJob. Used by the controller and the local optimizer."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

import trainer_api
from trainer_api import OPTIMIZATION_JOB_LABEL, PARAMETERS_ANNOTATION, parameter_env_name

from trainer_search.space import Value, assignment_strings

__all__ = [
    "ENGINE_STATE_ANNOTATION",
    "PRUNED_ANNOTATION",
    "STEPS_ANNOTATION",
    "TRIAL_ANNOTATION",
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


def trial_steps(annotations: Mapping[str, str]) -> dict[int, float]:
    """The objective per step the controller has recorded on a trial (empty: none yet)."""
    history = json.loads(annotations.get(STEPS_ANNOTATION, "{}"))
    return {int(step): float(value) for step, value in (history.get("steps") or {}).items()}


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
            "name": f"{metadata['name']}-{number}",
            "namespace": metadata.get("namespace"),
            "labels": {
                **(template_meta.get("labels") or {}),
                OPTIMIZATION_JOB_LABEL: metadata["name"],
            },
            "annotations": {
                **(template_meta.get("annotations") or {}),
                PARAMETERS_ANNOTATION: json.dumps(strings, sort_keys=True),
                TRIAL_ANNOTATION: str(number),
                ENGINE_STATE_ANNOTATION: json.dumps(dict(engine_state), sort_keys=True),
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
