"""Optuna behind the search core: every call rebuilds an in-memory study from the history.

Random, TPE and CMA-ES are Optuna's samplers; grid walks the product of the choices in the
order the space lists them; quasi-random is a scrambled Sobol sequence (SciPy's, which Optuna's
QMC sampler also uses) indexed by how many trials came before, so no counter outlives a call.
Early stopping is Optuna's median and successive-halving pruners, asked step by step.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState as OptunaState

from trainer_search.space import Choice, Domain, Range, Study, TrialRecord, Value

__all__ = [
    "PruneDecision",
    "Suggestion",
    "best_trial",
    "check_pruning",
    "parameter_importance",
    "suggest",
]

_STATES: Final = {
    "running": OptunaState.RUNNING,
    "complete": OptunaState.COMPLETE,
    "failed": OptunaState.FAIL,
    "pruned": OptunaState.PRUNED,
}
_SEED_STRIDE: Final = 1_000_003


@dataclass(frozen=True)
class Suggestion:
    """The parameters of a new trial and what the engine noted for it."""

    parameters: dict[str, Value]
    engine_state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PruneDecision:
    """Whether to stop a trial (and at which step), the last step looked at, the new state."""

    prune: bool
    at_step: int | None
    checked_step: int | None
    engine_state: dict[str, Any]


def suggest(study: Study, history: Sequence[TrialRecord], count: int) -> list[Suggestion]:
    """Up to ``count`` new trials after ``history`` (fewer once a grid is used up)."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if count == 0:
        return []
    if study.algorithm == "grid":
        return _grid(study, history, count)
    if study.algorithm == "qmc":
        return _quasi_random(study, len(history), count)
    optuna_study = _rebuild(study, history, _sampler(study, len(history)))
    distributions = _distributions(study.space)
    suggestions = []
    for _ in range(count):
        trial = optuna_study.ask(distributions)
        frozen = optuna_study.trials[-1]
        suggestions.append(Suggestion(dict(trial.params), dict(frozen.system_attrs)))
    return suggestions


def check_pruning(study: Study, history: Sequence[TrialRecord], number: int) -> PruneDecision:
    """Ask the stopping rule about trial ``number``'s steps after its ``checked_step``."""
    (target,) = [record for record in history if record.number == number]
    rule = study.early_stopping
    steps = sorted(
        step for step in target.steps if target.checked_step is None or step > target.checked_step
    )
    if rule is None or not steps:
        return PruneDecision(False, None, target.checked_step, dict(target.engine_state))
    pruner: optuna.pruners.BasePruner
    if rule.rule == "median":
        pruner = optuna.pruners.MedianPruner(
            n_startup_trials=rule.startup_trials, n_warmup_steps=rule.warmup_steps
        )
    else:
        pruner = optuna.pruners.SuccessiveHalvingPruner(
            min_resource=rule.min_resource, reduction_factor=rule.reduction_factor
        )
    others = [record for record in history if record.number != number]
    optuna_study = _rebuild(study, others, optuna.samplers.RandomSampler(), pruner)
    known = {
        s: v
        for s, v in target.steps.items()
        if target.checked_step is not None and s <= target.checked_step
    }
    optuna_study.add_trial(
        _frozen(
            study,
            TrialRecord(
                number, target.parameters, "running", steps=known, engine_state=target.engine_state
            ),
        )
    )
    # A Trial handle on the added trial: report and should_prune are Optuna's public calls.
    trial = optuna.trial.Trial(optuna_study, optuna_study.trials[-1]._trial_id)
    decision_step = None
    checked = target.checked_step
    for step in steps:
        trial.report(target.steps[step], step)
        checked = step
        if trial.should_prune():
            decision_step = step
            break
    state = dict(optuna_study.trials[-1].system_attrs)
    return PruneDecision(decision_step is not None, decision_step, checked, state)


def best_trial(study: Study, history: Iterable[TrialRecord]) -> TrialRecord | None:
    """The completed trial with the best objective (the earliest among equals), or None."""
    finished = [
        record
        for record in history
        if record.state == "complete"
        and record.objective is not None
        and math.isfinite(record.objective)
    ]
    if not finished:
        return None
    sign = 1.0 if study.direction == "minimize" else -1.0
    return min(finished, key=lambda record: (sign * (record.objective or 0.0), record.number))


def parameter_importance(study: Study, history: Sequence[TrialRecord]) -> dict[str, float]:
    """How much each parameter explains of the objective's variance (Optuna's fANOVA, seeded);
    empty before two trials have completed with a finite objective. fANOVA's random forest is
    scikit-learn's: ``pip install "trainer-search[importance]"``."""
    finished = [
        r
        for r in history
        if r.state == "complete" and r.objective is not None and math.isfinite(r.objective)
    ]
    if len(finished) < 2:
        return {}
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=study.seed or 0)
    except ImportError as error:
        raise ImportError(
            f"parameter importance needs scikit-learn: pip install "
            f'"trainer-search[importance]" ({error})'
        ) from error
    optuna_study = _rebuild(study, finished, optuna.samplers.RandomSampler())
    found = optuna.importance.get_param_importances(optuna_study, evaluator=evaluator)
    return {name: float(value) for name, value in found.items()}


def _distributions(space: Mapping[str, Domain]) -> dict[str, BaseDistribution]:
    result: dict[str, BaseDistribution] = {}
    for name, domain in space.items():
        if isinstance(domain, Choice):
            result[name] = CategoricalDistribution(domain.choices)
        elif domain.integer:
            result[name] = IntDistribution(
                math.ceil(domain.low), math.floor(domain.high), log=domain.log
            )
        else:
            result[name] = FloatDistribution(domain.low, domain.high, log=domain.log)
    return result


def _seed(study: Study, tried: int) -> int | None:
    """A seed per history length: the same history gives the same suggestions."""
    return None if study.seed is None else (study.seed * _SEED_STRIDE + tried) % 2**32


def _sampler(study: Study, tried: int) -> optuna.samplers.BaseSampler:
    seed = _seed(study, tried)
    if study.algorithm == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if study.algorithm == "cmaes":
        return optuna.samplers.CmaEsSampler(
            seed=seed,
            independent_sampler=optuna.samplers.RandomSampler(seed=seed),
            warn_independent_sampling=False,
        )
    return optuna.samplers.RandomSampler(seed=seed)


def _rebuild(
    study: Study,
    history: Iterable[TrialRecord],
    sampler: optuna.samplers.BaseSampler,
    pruner: optuna.pruners.BasePruner | None = None,
) -> optuna.Study:
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # not a line per rebuilt study
    try:
        optuna_study = optuna.create_study(
            direction=study.direction, sampler=sampler, pruner=pruner
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    for record in sorted(history, key=lambda record: record.number):
        optuna_study.add_trial(_frozen(study, record))
    return optuna_study


def _frozen(study: Study, record: TrialRecord) -> optuna.trial.FrozenTrial:
    state = record.state
    if state == "complete" and (record.objective is None or not math.isfinite(record.objective)):
        state = "failed"  # finished without a usable objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.trial.create_trial(
            state=_STATES[state],
            value=record.objective if state == "complete" else None,
            params=_typed(study.space, record.parameters),
            distributions=_distributions(study.space),
            intermediate_values=dict(record.steps),
            system_attrs=dict(record.engine_state),
        )


def _typed(space: Mapping[str, Domain], parameters: Mapping[str, Value]) -> dict[str, Any]:
    """Parameter values in the domain's type (history read back from strings)."""
    typed: dict[str, Any] = {}
    for name, domain in space.items():
        if name not in parameters:
            raise ValueError(f"trial parameters lack {name!r}")
        value = parameters[name]
        if isinstance(domain, Choice):
            typed[name] = str(value)
        elif domain.integer:
            typed[name] = int(float(value))
        else:
            typed[name] = float(value)
    return typed


def _grid(study: Study, history: Sequence[TrialRecord], count: int) -> list[Suggestion]:
    names = list(study.space)
    tried = {tuple(str(record.parameters.get(name)) for name in names) for record in history}
    cells = itertools.product(
        *(domain.choices for domain in study.space.values() if isinstance(domain, Choice))
    )
    fresh = (cell for cell in cells if cell not in tried)
    return [
        Suggestion(dict(zip(names, cell, strict=True))) for cell in itertools.islice(fresh, count)
    ]


def _quasi_random(study: Study, tried: int, count: int) -> list[Suggestion]:
    from scipy.stats import qmc  # type: ignore[import-untyped]

    sequence = qmc.Sobol(d=len(study.space), scramble=True, seed=study.seed or 0)
    if tried:
        sequence.fast_forward(tried)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # balance properties need 2**m points
        points = sequence.random(count)
    return [Suggestion(_from_unit(study.space, point)) for point in points]


def _from_unit(space: Mapping[str, Domain], point: Sequence[float]) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for (name, domain), u in zip(space.items(), point, strict=True):
        if isinstance(domain, Choice):
            values[name] = domain.choices[
                min(int(u * len(domain.choices)), len(domain.choices) - 1)
            ]
            continue
        values[name] = _scale(domain, float(u))
    return values


def _scale(domain: Range, u: float) -> Value:
    if domain.log:
        value = math.exp(math.log(domain.low) + u * (math.log(domain.high) - math.log(domain.low)))
    else:
        value = domain.low + u * (domain.high - domain.low)
    if domain.integer:
        return min(max(round(value), math.ceil(domain.low)), math.floor(domain.high))
    return value
