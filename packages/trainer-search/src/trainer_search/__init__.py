"""The search core: suggest a study's next trials, and which to stop, from its trial history;
and the one lifecycle of an OptimizationJob (``decide``) that both drivers apply.

Pure and typed: the history goes in, suggestions and decisions come out; nothing is kept
between calls. What an engine needs to remember about a trial (CMA-ES's generation,
successive halving's rung values) travels in ``TrialRecord.engine_state``, which drivers store
with the trial (the local optimizer in its state file, the controller in an annotation).
The local ``OptimizerClient`` and the OptimizationJob controller both call it.
"""

from importlib import metadata as _metadata

from trainer_search.engine import (
    PruneDecision,
    best_trial,
    check_pruning,
    parameter_importance,
    suggest,
)
from trainer_search.lifecycle import (
    MAX_STEPS_KEPT,
    Decision,
    NewTrial,
    TrialChange,
    decide,
    job_message,
    job_phase,
    trial_record,
)
from trainer_search.observed import ObservedTrial, TrialPhase, observe_trainjob
from trainer_search.space import (
    Algorithm,
    Choice,
    Direction,
    Domain,
    Range,
    Study,
    TrialRecord,
    TrialState,
    Value,
    assignment_strings,
    grid_size,
    study_from_job,
    value_types,
)
from trainer_search.trials import (
    ENGINE_STATE_ANNOTATION,
    PRUNED_ANNOTATION,
    STEPS_ANNOTATION,
    TRIAL_ANNOTATION,
    StepsRecord,
    read_steps,
    trial_annotations,
    trial_name,
    trial_steps,
    trial_trainjob,
)

__version__ = _metadata.version("trainer-search")

__all__ = [
    "ENGINE_STATE_ANNOTATION",
    "MAX_STEPS_KEPT",
    "PRUNED_ANNOTATION",
    "STEPS_ANNOTATION",
    "TRIAL_ANNOTATION",
    "Algorithm",
    "Choice",
    "Decision",
    "Direction",
    "Domain",
    "NewTrial",
    "ObservedTrial",
    "PruneDecision",
    "Range",
    "StepsRecord",
    "Study",
    "TrialChange",
    "TrialPhase",
    "TrialRecord",
    "TrialState",
    "Value",
    "__version__",
    "assignment_strings",
    "best_trial",
    "check_pruning",
    "decide",
    "grid_size",
    "job_message",
    "job_phase",
    "observe_trainjob",
    "parameter_importance",
    "read_steps",
    "study_from_job",
    "suggest",
    "trial_annotations",
    "trial_name",
    "trial_record",
    "trial_steps",
    "trial_trainjob",
    "value_types",
]
