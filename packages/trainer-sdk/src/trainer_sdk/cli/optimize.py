"""``trainer optimize`` and ``trainer optimizationjob get|list|delete``: hyperparameter search
from the command line, over ``OptimizerClient``."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import yaml
from rich.table import Table

from trainer_sdk.cli.app import (
    OUTPUTS,
    _age,
    _column,
    _emit,
    _fail,
    _load_function,
    _table,
)
from trainer_sdk.client import select_backend_config
from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.optimizer import (
    CmaEsSearch,
    GridSearch,
    MedianStopping,
    Objective,
    OptimizationJob,
    OptimizerClient,
    QuasiRandomSearch,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TPESearch,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.optimizer.backends.base import best_result
from trainer_sdk.optimizer.insight import importance
from trainer_sdk.optimizer.types.algorithm_types import BaseAlgorithm, BaseEarlyStopping
from trainer_sdk.optimizer.types.search_types import CategoricalSearchSpace, ContinuousSearchSpace
from trainer_sdk.types import CustomTrainer

__all__ = ["optimizationjob", "optimize", "parse_param"]

_ALGORITHMS: dict[str, type[BaseAlgorithm]] = {
    "random": RandomSearch,
    "grid": GridSearch,
    "tpe": TPESearch,
    "cmaes": CmaEsSearch,
    "qmc": QuasiRandomSearch,
}


def _client(context: click.Context) -> OptimizerClient:
    """The optimizer client for the ``trainer`` group's ``--backend`` and ``--root``."""
    options = context.find_root().obj or {"backend": "auto", "local": {}}
    backend = options["backend"]
    if backend == "auto":
        chosen = LocalBackendConfig if options["local"] else type(select_backend_config())
        backend = "kubernetes" if chosen is KubernetesBackendConfig else "local"
    if backend == "kubernetes":
        return OptimizerClient(KubernetesBackendConfig())
    return OptimizerClient(LocalBackendConfig(**options["local"]))


def parse_param(text: str) -> tuple[str, ContinuousSearchSpace | CategoricalSearchSpace]:
    """``lr=loguniform:1e-4:0.1``, ``m=uniform:0:1`` or ``bs=choice:16,32``."""
    name, separator, spec = text.partition("=")
    kind, _, rest = spec.partition(":")
    try:
        if not separator or not name:
            raise ValueError("no NAME=")
        if kind in ("uniform", "loguniform"):
            low, high = rest.split(":")
            space = Search.uniform if kind == "uniform" else Search.loguniform
            return name, space(float(low), float(high))
        if kind == "choice" and rest:
            return name, Search.choice(rest.split(","))
        raise ValueError(f"unknown distribution {kind!r}")
    except ValueError as error:
        _fail(
            f"--param: expected NAME=uniform:MIN:MAX, NAME=loguniform:MIN:MAX or "
            f"NAME=choice:A,B,...; got {text!r} ({error})"
        )


def _stopping(rule: str) -> BaseEarlyStopping | None:
    return {"median": MedianStopping(), "asha": SuccessiveHalving()}.get(rule)


def _trials_table(job: OptimizationJob) -> Table:
    best = best_result(job)
    shares = importance(job)
    caption = "* best" + (
        "; importance " + ", ".join(f"{name} {share:.2f}" for name, share in shares.items())
        if shares
        else ""
    )
    rows = []
    for trial in job.trials:
        mark = " *" if best is not None and trial.parameters == best.parameters else ""
        rows.append(
            [
                trial.name + mark,
                trial.trainjob.status,
                "" if trial.objective is None else f"{trial.objective:.6g}",
                "" if trial.pruned_at_step is None else str(trial.pruned_at_step),
                " ".join(f"{k}={v}" for k, v in trial.parameters.items()),
            ]
        )
    columns = [
        _column("TRIAL", name=True),
        _column("STATE"),
        _column(job.objectives[0].metric.upper()),
        _column("PRUNED AT"),
        _column("PARAMETERS", name=True),
    ]
    return _table(columns, rows, title=f"{job.name}: {job.status}", caption=caption)


def _jobs_table(jobs: list[OptimizationJob]) -> Table:
    now = datetime.now(timezone.utc)
    newest_first = sorted(jobs, key=lambda job: job.creation_timestamp, reverse=True)
    rows = [
        [job.name, job.status, str(len(job.trials)), _age(job.creation_timestamp, now)]
        for job in newest_first
    ]
    columns = [_column("NAME", name=True), _column("STATUS"), _column("TRIALS"), _column("AGE")]
    return _table(columns, rows)


@click.command()
@click.argument("target")
@click.option("--param", "params", multiple=True, help="NAME=uniform:MIN:MAX, loguniform, choice.")
@click.option("--trials", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--max-failed", type=click.IntRange(min=0), default=None)
@click.option("--metric", default="loss", show_default=True)
@click.option("--direction", type=click.Choice(["minimize", "maximize"]), default="minimize")
@click.option("--algorithm", type=click.Choice(list(_ALGORITHMS)), default="random")
@click.option("--seed", type=int, default=None)
@click.option("--early-stopping", type=click.Choice(["none", "median", "asha"]), default="none")
@click.option("--runtime", default=None, help="The trials' runtime (default torch-distributed).")
@click.option("--detach", is_flag=True, help="Print the name and return.")
@click.option("--timeout", type=click.IntRange(min=2), default=3600, show_default=True)
@click.pass_context
def optimize(
    context: click.Context,
    target: str,
    params: tuple[str, ...],
    trials: int,
    parallel: int,
    max_failed: int | None,
    metric: str,
    direction: str,
    algorithm: str,
    seed: int | None,
    early_stopping: str,
    runtime: str | None,
    detach: bool,
    timeout: int,
) -> None:
    """Tune TARGET: FILE.py:FUNC or module:FUNC with --param, or an OptimizationJob YAML file.

    Locally the command drives the trials and waits for them (--detach still needs this process
    alive for new trials to start); exit code 0 when the job completes, 1 when it fails."""
    client = _client(context)
    try:
        if target.endswith((".yaml", ".yml")):
            path = Path(target)
            if not path.is_file():
                _fail(f"TARGET: no such file {target!r}")
            name = client.backend.submit(yaml.safe_load(path.read_text()))
        else:
            if not params:
                _fail("--param: at least one parameter is needed with a function TARGET")
            seeded: dict[str, Any] = {} if algorithm == "grid" else {"random_state": seed}
            name = client.optimize(
                TrainJobTemplate(
                    trainer=CustomTrainer(func=_load_function(target)), runtime=runtime
                ),
                trial_config=TrialConfig(trials, parallel, max_failed),
                search_space=dict(parse_param(text) for text in params),
                objectives=[Objective(metric, direction)],  # type: ignore[arg-type]
                algorithm=_ALGORITHMS[algorithm](**seeded),
                early_stopping=_stopping(early_stopping),
            )
    except ValueError as error:
        _fail(str(error))
    click.echo(name)
    if detach:
        return
    try:
        job = client.wait_for_job_status(name, {"Complete", "Failed"}, timeout, 1)
    except TimeoutError as error:
        _fail(str(error), 124)
    _emit(job, "table", lambda: _trials_table(job))
    sys.exit(0 if job.status == "Complete" else 1)


@click.group(name="optimizationjob")
def optimizationjob() -> None:
    """Show and delete optimization jobs (``trainer optimize`` starts them)."""


@optimizationjob.command(name="list")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def list_command(context: click.Context, output: str) -> None:
    """Every optimization job with its status."""
    jobs = _client(context).list_jobs()
    _emit(jobs, output, lambda: _jobs_table(jobs))


@optimizationjob.command(name="get")
@click.argument("name")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def get_command(context: click.Context, name: str, output: str) -> None:
    """One optimization job: its trials (parameters, objective, state, pruned-at step)."""
    try:
        job = _client(context).get_job(name)
    except RuntimeError as error:
        _fail(str(error), 1)
    _emit(job, output, lambda: _trials_table(job))


@optimizationjob.command(name="delete")
@click.argument("name")
@click.pass_context
def delete_command(context: click.Context, name: str) -> None:
    """Delete the optimization job and its trials."""
    try:
        _client(context).delete_job(name)
    except RuntimeError as error:
        _fail(str(error), 1)
    click.echo(f"deleted {name}")
