"""What a finished or running optimization job says: its best trial and each parameter's share
of the objective's variance (Optuna's fANOVA). Shared by ``trainer optimizationjob get`` and
the ``trainer ui`` optimization page."""

from __future__ import annotations

from trainer_search import TrialRecord, parameter_importance, study_from_job

from trainer_sdk.optimizer.backends.base import best_trial
from trainer_sdk.optimizer.spec import Definition, optimization_job
from trainer_sdk.optimizer.types.optimization_types import OptimizationJob

__all__ = ["best_trial", "importance"]


def importance(job: OptimizationJob) -> dict[str, float]:
    """Each parameter's share of the objective's variance over the completed trials."""
    definition = Definition(job.search_space, job.objectives, job.algorithm, job.trial_config, None)
    template = {"spec": {"runtimeRef": {"name": "any"}}}
    study = study_from_job(optimization_job(job.name, definition, template))
    records = [
        TrialRecord(number, trial.parameters, "complete", trial.objective)
        for number, trial in enumerate(job.trials)
        if trial.objective is not None
        and trial.pruned_at_step is None
        and trial.trainjob.status == "Complete"
    ]
    return parameter_importance(study, records)
