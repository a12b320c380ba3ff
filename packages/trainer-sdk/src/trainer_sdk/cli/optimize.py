"""``trainer optimize`` and ``trainer optimizationjob get|list|delete``: hyperparameter search
from the command line, over ``OptimizerClient``."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from trainer_sdk.cli.clients import optimizer_client
from trainer_sdk.cli.output import OUTPUTS, age, column, emit, fail, plain, say, table

if TYPE_CHECKING:
    from rich.table import Table

    from trainer_sdk.optimizer import OptimizationJob, OptimizerClient
    from trainer_sdk.optimizer.types.algorithm_types import BaseAlgorithm, BaseEarlyStopping
    from trainer_sdk.optimizer.types.search_types import (
        CategoricalSearchSpace,
        ContinuousSearchSpace,
    )

__all__ = [
    "delete_command",
    "export_command",
    "get_command",
    "list_command",
    "optimizationjob",
    "optimize",
    "parse_param",
    "resume_command",
    "trial_rows",
]

_ALGORITHMS = ("random", "grid", "tpe", "cmaes", "qmc")


def _algorithm(name: str, seed: int | None) -> BaseAlgorithm:
    """The search algorithm ``--algorithm`` names, seeded unless it is a grid."""
    from trainer_sdk import optimizer

    classes: dict[str, type[BaseAlgorithm]] = {
        "random": optimizer.RandomSearch,
        "grid": optimizer.GridSearch,
        "tpe": optimizer.TPESearch,
        "cmaes": optimizer.CmaEsSearch,
        "qmc": optimizer.QuasiRandomSearch,
    }
    seeded: dict[str, Any] = {} if name == "grid" else {"random_state": seed}
    return classes[name](**seeded)


def parse_param(text: str) -> tuple[str, ContinuousSearchSpace | CategoricalSearchSpace]:
    """``lr=loguniform:1e-4:0.1``, ``m=uniform:0:1`` or ``bs=choice:16,32``."""
    from trainer_sdk.optimizer import Search

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
        fail(
            f"--param: expected NAME=uniform:MIN:MAX, NAME=loguniform:MIN:MAX or "
            f"NAME=choice:A,B,...; got {text!r} ({error})"
        )


def _stopping(rule: str) -> BaseEarlyStopping | None:
    from trainer_sdk.optimizer import MedianStopping, SuccessiveHalving

    return {"median": MedianStopping(), "asha": SuccessiveHalving()}.get(rule)


def _trials_table(job: OptimizationJob) -> Table:
    from trainer_sdk.optimizer.insight import importance

    shares = importance(job)
    caption = "* best" + (
        "; importance " + ", ".join(f"{name} {share:.2f}" for name, share in shares.items())
        if shares
        else ""
    )
    rows = []
    for trial in job.trials:
        mark = " *" if trial.name == job.best_trial_name else ""
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
        column("TRIAL", name=True),
        column("STATE"),
        column(job.objectives[0].metric.upper()),
        column("PRUNED AT"),
        column("PARAMETERS", name=True),
    ]
    title = f"{job.name}: {job.status}" + (f" ({job.message})" if job.message else "")
    return table(columns, rows, title=title, caption=caption)


def _jobs_table(jobs: list[OptimizationJob]) -> Table:
    now = datetime.now(timezone.utc)
    newest_first = sorted(jobs, key=lambda job: job.creation_timestamp, reverse=True)
    rows = [
        [job.name, job.status, str(len(job.trials)), age(job.creation_timestamp, now)]
        for job in newest_first
    ]
    columns = [column("NAME", name=True), column("STATUS"), column("TRIALS"), column("AGE")]
    return table(columns, rows)


@click.command()
@click.argument("target")
@click.option("--param", "params", multiple=True, help="NAME=uniform:MIN:MAX, loguniform, choice.")
@click.option("--trials", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--max-failed", type=click.IntRange(min=0), default=None)
@click.option("--metric", default="loss", show_default=True)
@click.option("--direction", type=click.Choice(["minimize", "maximize"]), default="minimize")
@click.option("--algorithm", type=click.Choice(_ALGORITHMS), default="random")
@click.option("--seed", type=int, default=None)
@click.option("--early-stopping", type=click.Choice(["none", "median", "asha"]), default="none")
@click.option("--runtime", default=None, help="The trials' runtime (default torch-distributed).")
@click.option("--warm-start", default=None, help="An earlier job whose trials seed the search.")
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
    warm_start: str | None,
    detach: bool,
    timeout: int,
) -> None:
    """Tune TARGET: FILE.py:FUNC or module:FUNC with --param, or an OptimizationJob YAML file.

    Locally the command drives the trials and waits for them (--detach still needs this process
    alive for new trials to start); exit code 0 when the job completes, 1 when it fails."""
    from trainer_sdk import optimizer
    from trainer_sdk.manifests import targets
    from trainer_sdk.types import CustomTrainer

    client = optimizer_client(context)
    try:
        if target.endswith((".yaml", ".yml")):
            path = Path(target)
            if not path.is_file():
                fail(f"TARGET: no such file {target!r}")
            import yaml

            name = client.submit(yaml.safe_load(path.read_text()))
        else:
            if not params:
                fail("--param: at least one parameter is needed with a function TARGET")
            trainer = CustomTrainer(func=targets.load_function(target))
            name = client.optimize(
                optimizer.TrainJobTemplate(trainer=trainer, runtime=runtime),
                trial_config=optimizer.TrialConfig(trials, parallel, max_failed),
                search_space=dict(parse_param(text) for text in params),
                objectives=[optimizer.Objective(metric, direction)],  # type: ignore[arg-type]
                algorithm=_algorithm(algorithm, seed),
                early_stopping=_stopping(early_stopping),
                warm_start=warm_start,
            )
    except ValueError as error:
        fail(str(error))
    click.echo(name)
    if not detach:
        _wait(client, name, timeout)


def _wait(client: OptimizerClient, name: str, timeout: int) -> NoReturn:
    """Wait for job ``name`` to end, print its trials and exit 0 when it completed, else 1."""
    try:
        job = client.wait_for_job_status(name, {"Complete", "Failed"}, timeout, 1)
    except TimeoutError as error:
        fail(str(error), 124)
    emit(job, "table", lambda: _trials_table(job))
    sys.exit(0 if job.status == "Complete" else 1)


@click.group(name="optimizationjob")
def optimizationjob() -> None:
    """Show and delete optimization jobs (``trainer optimize`` starts them)."""


@optimizationjob.command(name="list")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def list_command(context: click.Context, output: str) -> None:
    """Every optimization job with its status."""
    jobs = optimizer_client(context).list_jobs()
    if not jobs and output == "table":
        say("No OptimizationJobs found")
    else:
        emit(jobs, output, lambda: _jobs_table(jobs))


@optimizationjob.command(name="get")
@click.argument("name")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def get_command(context: click.Context, name: str, output: str) -> None:
    """One optimization job: its trials (parameters, objective, state, pruned-at step)."""
    try:
        job = optimizer_client(context).get_job(name)
    except RuntimeError as error:
        fail(str(error), 1)
    emit(job, output, lambda: _trials_table(job))


@optimizationjob.command(name="resume")
@click.argument("name")
@click.option("--detach", is_flag=True, help="Return at once (the trials need this process).")
@click.option("--timeout", type=click.IntRange(min=2), default=3600, show_default=True)
@click.pass_context
def resume_command(context: click.Context, name: str, detach: bool, timeout: int) -> None:
    """Drive NAME on after the process driving it ended (killed, or the machine restarted):
    its trials are kept and none runs twice. Waits like optimize, unless --detach."""
    client = optimizer_client(context)
    try:
        client.resume_job(name)
    except RuntimeError as error:
        fail(str(error), 1)
    except ValueError as error:
        fail(str(error))
    if not detach:
        _wait(client, name, timeout)


def trial_rows(job: OptimizationJob) -> list[dict[str, Any]]:
    """A row per trial: name, state, objective, pruned-at step, best, then each parameter
    (non-finite objectives written as ``nan``/``inf``)."""
    rows = []
    for trial in job.trials:
        rows.append(
            {
                "trial": trial.name,
                "state": "Pruned" if trial.pruned_at_step is not None else trial.trainjob.status,
                job.objectives[0].metric: trial.objective,
                "pruned_at_step": trial.pruned_at_step,
                "best": trial.name == job.best_trial_name,
                **{name: trial.parameters.get(name) for name in sorted(job.search_space)},
            }
        )
    return rows


@optimizationjob.command(name="export")
@click.argument("name")
@click.option("--format", "kind", type=click.Choice(["csv", "json"]), default="csv")
@click.option("--file", "-f", "path", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(context: click.Context, name: str, kind: str, path: Path | None) -> None:
    """NAME's trials as a table: CSV (default) or JSON, to stdout or --file."""
    import csv
    import io

    try:
        job = optimizer_client(context).get_job(name)
    except RuntimeError as error:
        fail(str(error), 1)
    rows = trial_rows(job)
    if kind == "json":
        text = json.dumps(plain(rows), indent=2, allow_nan=False)
    else:
        buffer = io.StringIO()
        columns = list(rows[0]) if rows else ["trial"]
        writer = csv.DictWriter(buffer, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        text = buffer.getvalue().rstrip("\n")
    if path is None:
        click.echo(text)
    else:
        path.write_text(text + "\n")
        say(f"{len(rows)} trials of {name} written to {path}")


@optimizationjob.command(name="delete")
@click.argument("name")
@click.pass_context
def delete_command(context: click.Context, name: str) -> None:
    """Delete the optimization job and its trials."""
    try:
        optimizer_client(context).delete_job(name)
    except RuntimeError as error:
        fail(str(error), 1)
    say(f"optimizationjob/{name} deleted")
