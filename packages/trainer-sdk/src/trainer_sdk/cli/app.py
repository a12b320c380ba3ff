"""The ``trainer`` command: thin wrappers over ``TrainerClient``; exit code = job outcome.

Heavy modules (the client, the backends, rich, PyYAML) are imported inside the commands, so that
``trainer --help`` answers at once.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from trainer_sdk import constants
from trainer_sdk.cli.clients import trainer_client
from trainer_sdk.cli.output import (
    OUTPUTS,
    age,
    column,
    complain,
    emit,
    fail,
    say,
    stderr,
    table,
)
from trainer_sdk.errors import JobFailedError, TrainerError

if TYPE_CHECKING:
    from rich.table import Table

    from trainer_sdk import types
    from trainer_sdk.client import TrainerClient
    from trainer_sdk.options import Option
    from trainer_sdk.status.packages import PackageStatus
    from trainer_sdk.training.metrics import MetricPoint

__all__ = ["cli", "main", "status_line"]

PROGRESS_INTERVAL_SECONDS = 0.5
STATUS_LINE_SECONDS = 5.0  # a non-TTY wait prints a status line this often
INTERRUPTED_EXIT_CODE = 130
TIMEOUT_EXIT_CODE = 124
FINISHED = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED)


def _packages(client: TrainerClient, job: types.TrainJob) -> PackageStatus | None:
    """Where the job's ``packages_to_install`` stand (None: it installs nothing); the step log
    is read only while pip runs."""
    from trainer_sdk.status.packages import INSTALLING, package_status

    try:
        events = client.get_job_events(job.name)
    except (TrainerError, NotImplementedError):
        return None
    failed = (job.message or "").startswith("PackageInstallFailed")
    status = package_status(events, failed=failed)
    if status is not None and status.state == INSTALLING and job.steps:
        status = package_status(events, client.get_job_logs(job.name, job.steps[0].name))
    return status


def _listed_status(client: TrainerClient, job: types.TrainJob) -> str:
    """The STATUS column: ``Installing packages (2/5)`` in place of Created while pip runs."""
    from trainer_sdk.status.packages import INSTALLING

    if job.status == constants.TRAINJOB_CREATED:
        packages = _packages(client, job)
        if packages is not None and packages.state == INSTALLING:
            return str(packages)
    return job.status


def _jobs_table(
    jobs: list[types.TrainJob], statuses: list[str], now: datetime | None = None
) -> Table:
    """The jobs as listed (``list`` sorts them newest first), each with its STATUS cell."""
    now = now or datetime.now(timezone.utc)
    rows = []
    for job, status in zip(jobs, statuses, strict=True):
        progress = job.trainer_status.progress_percentage if job.trainer_status else None
        rows.append(
            [
                job.name,
                status,
                job.runtime.name,
                str(job.num_nodes),
                "" if progress is None else f"{progress}%",
                age(job.creation_timestamp, now),
            ]
        )
    columns = [
        column("NAME", name=True),
        column("STATUS"),
        column("RUNTIME", name=True),
        column("NODES"),
        column("PROGRESS"),
        column("AGE"),
    ]
    return table(columns, rows)


def _job_table(job: types.TrainJob, packages: PackageStatus | None = None) -> Table:
    """The job's steps (the package install first, when it has one); the caption: its message,
    its checkpoint, where a fine-tune's model is, and whether its ranks run on gems kernels."""
    from trainer_sdk.status.packages import INSTALL_STEP

    rows = [[INSTALL_STEP, str(packages), "", "", " ".join(packages.requested)]] if packages else []
    rows += [
        [step.name, step.status or "", step.device, step.device_count, step.pod_name]
        for step in job.steps
    ]
    gems = "gems kernels: on (TRAINER_GEMS=1)" if job.gems_kernels else "gems kernels: off"
    output = f"output: {job.output} (model/, adapter/ after LoRA)" if job.output else None
    caption = "\n".join(filter(None, [job.message, _checkpoint_line(job), output, gems]))
    columns = [
        column("STEP", name=True),
        column("STATUS"),
        column("DEVICE"),
        column("COUNT"),
        column("POD", name=True),
    ]
    return table(columns, rows, title=f"{job.name}: {job.status}", caption=caption)


def _checkpoint_line(job: types.TrainJob) -> str | None:
    """The latest checkpoint's step and age (``trainer_sdk.checkpoint``), when there is one."""
    found = job.checkpoint
    if found is None or found.step is None:
        return None
    when = f", {age(found.saved_at, datetime.now(timezone.utc))} ago" if found.saved_at else ""
    resumed = found.resumed_from_step
    origin = f", resumed from step {resumed}" if resumed is not None else ""
    return f"checkpoint: step {found.step}{when} (attempt {found.attempt}{origin})"


@click.group()
@click.version_option(
    package_name="trainer-sdk", prog_name="trainer", message="%(prog)s %(version)s"
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "local", "kubernetes"]),
    default="auto",
    show_default=True,
    help="auto: Kubernetes when a kubeconfig exists, else local.",
)
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    default=None,
    help="Where local jobs live (default $TRAINER_SDK_ROOT or ~/.local/share/trainer-sdk/jobs).",
)
@click.pass_context
def cli(context: click.Context, backend: str, root: Path | None) -> None:
    """Run and watch Kubeflow-compatible TrainJobs, on this machine or in a cluster."""
    context.obj = {"backend": backend, "local": {"root": root} if root else {}}


def _parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name:
            fail(f"--env: expected NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def _follow_all(client: TrainerClient, name: str, timeout: float) -> None:
    """Print every step's lines as they come, each prefixed with its step, until the job ends or
    ``timeout`` seconds have passed."""
    steps = [step.name for step in client.get_job(name).steps]
    lock = threading.Lock()

    def follow(step: str, lines: Iterator[str]) -> None:
        for line in lines:
            with lock:
                click.echo(f"[{step}] {line}" if len(steps) > 1 else line)

    threads = [
        threading.Thread(
            target=follow, args=(step, client.get_job_logs(name, step, follow=True)), daemon=True
        )
        for step in steps
    ]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _outcome(client: TrainerClient, name: str, timeout: float) -> int:
    """Wait up to ``timeout`` seconds for the job's end; print it; 0 Complete, 1 Failed or
    Stopped."""
    from rich.markup import escape

    try:
        job = client.wait_for_job_status(
            name,
            {constants.TRAINJOB_COMPLETE},
            timeout=timeout,  # type: ignore[arg-type]  # upstream annotates int; any number works
            polling_interval=min(1, timeout / 2),  # type: ignore[arg-type]
        )
    except JobFailedError as error:
        say(f"[red]{escape(str(error))}[/red]")
        return 1
    say(f"TrainJob {job.name}: [green]{job.status}[/green]")
    return 0


def _interrupted(client: TrainerClient, name: str | None) -> NoReturn:
    """Ctrl-C: stop the job (locally it is kept, Stopped, with its logs; a cluster job is
    deleted), one line, exit 130."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this
    try:
        if name is None:
            line = "interrupted before a TrainJob was created"
        else:
            try:
                client.stop_job(name)
                line = (
                    f"TrainJob {name} stopped (interrupted); `trainer logs {name}` shows its logs"
                )
            except TrainerError:  # a cluster keeps no stopped job
                client.delete_job(name)
                line = f"TrainJob {name} deleted (interrupted)"
    finally:
        signal.signal(signal.SIGINT, previous)
    say(line)
    sys.exit(INTERRUPTED_EXIT_CODE)


def _stopped_watching(name: str) -> NoReturn:
    """Ctrl-C on a command that only watches NAME: the job runs on; one line, exit 130."""
    say(f"stopped watching TrainJob {name} (interrupted); it runs on")
    sys.exit(INTERRUPTED_EXIT_CODE)


@cli.command()
@click.argument("target", required=False)
@click.option(
    "-f", "--file", "manifest_file", type=click.Path(path_type=Path), help="A TrainJob YAML."
)
@click.option("--nodes", type=click.IntRange(min=1), help="Number of training nodes.")
@click.option("--procs-per-node", type=click.IntRange(min=1), help="Processes per node.")
@click.option(
    "--runtime", "runtime_name", default=None, help="Runtime name (default torch-distributed)."
)
@click.option(
    "--env", "env_pairs", multiple=True, help="NAME=VALUE for the training nodes; repeatable."
)
@click.option("--name", default=None, help="The TrainJob's name (default: generated).")
@click.option("--detach", is_flag=True, help="Print the name and return; the job keeps running.")
@click.option("--timeout", type=click.IntRange(min=1), default=3600, show_default=True)
@click.pass_context
def run(
    context: click.Context,
    target: str | None,
    manifest_file: Path | None,
    nodes: int | None,
    procs_per_node: int | None,
    runtime_name: str | None,
    env_pairs: tuple[str, ...],
    name: str | None,
    detach: bool,
    timeout: int,
) -> None:
    """Run TARGET (FILE.py, FILE.py:function or module:function) or -f TRAINJOB.yaml; exit with
    the job's outcome. Ctrl-C stops the job (exit 130); with --detach it runs on."""
    if (target is None) == (manifest_file is None):
        fail(
            "give exactly one of TARGET (FILE.py, FILE.py:function or module:function) "
            "and -f TRAINJOB.yaml"
        )
    from trainer_sdk.overrides import TrainerOverrides

    env = _parse_env(env_pairs)
    client = trainer_client(context, stop_on_exit=not detach)
    job_name: str | None = None
    try:
        overrides = TrainerOverrides(
            nodes, procs_per_node, env, runtime_name if manifest_file else None
        )
        job_name = _submit(client, target, manifest_file, overrides, runtime_name, name)
        say(f"TrainJob {job_name} created")
        if detach:
            click.echo(job_name)
            return
        started = time.monotonic()
        _follow_all(client, job_name, timeout)
        code = _outcome(client, job_name, max(1, round(timeout - time.monotonic() + started)))
    except TimeoutError as error:
        fail(str(error), 124)
    except KeyboardInterrupt:
        _interrupted(client, job_name)
    sys.exit(code)


def _submit(
    client: TrainerClient,
    target: str | None,
    manifest_file: Path | None,
    overrides: Option,
    runtime_name: str | None,
    name: str | None,
) -> str:
    """Create the TrainJob ``run`` was asked for, through ``submit`` (a file) or ``train`` (a
    function or a script); exit 2 on bad input."""
    from trainer_sdk.manifests import files, targets
    from trainer_sdk.options import Name, TrainerCommand
    from trainer_sdk.types import CustomTrainer

    named: list[Option] = [Name(name)] if name else []
    try:
        if manifest_file is not None:
            try:
                manifest, runtime_manifest = files.read_trainjob(manifest_file)
            except ValueError as error:
                fail(f"-f: {error}")
            # --runtime: the named runtime instead of one the file may hold
            runtime_manifest = None if runtime_name else runtime_manifest
            return client.submit(manifest, runtime_manifest, [*named, overrides])
        runtime = client.get_runtime(runtime_name or constants.DEFAULT_TRAINING_RUNTIME)
        if str(target).endswith(".py"):
            command = targets.script_command(runtime, Path(str(target)))
            return client.train(runtime, options=[*named, TrainerCommand(command), overrides])
        trainer = CustomTrainer(func=targets.load_function(str(target)))
        return client.train(runtime, trainer=trainer, options=[*named, overrides])
    except (TrainerError, ValueError, NotImplementedError) as error:
        fail(str(error))


@cli.command(name="list")
@click.option(
    "--output",
    "-o",
    type=click.Choice(["table", "json", "yaml", "name"]),
    default="table",
    show_default=True,
    help="name: one trainjob/NAME a line (for xargs).",
)
@click.pass_context
def list_jobs(context: click.Context, output: str) -> None:
    """List TrainJobs, newest first, with their status, runtime and age."""
    client = trainer_client(context)
    jobs = sorted(client.list_jobs(), key=lambda job: job.creation_timestamp)[::-1]
    if not jobs and output in ("table", "name"):
        say("No TrainJobs found")
    elif output == "name":
        click.echo("".join(f"trainjob/{job.name}\n" for job in jobs), nl=False)
    else:
        emit(jobs, output, lambda: _jobs_table(jobs, [_listed_status(client, job) for job in jobs]))


def _metrics_table(points: list[MetricPoint]) -> Table:
    """The latest value of each metric and the step it was logged at."""
    latest: dict[str, tuple[float, int]] = {}
    for point in points:
        for key, value in point.values.items():
            latest[key] = (value, point.step)
    rows = [[key, f"{value:.6g}", str(step)] for key, (value, step) in sorted(latest.items())]
    return table([column("METRIC", name=True), column("VALUE"), column("STEP")], rows)


@cli.command()
@click.argument("name")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.option("--metrics", "show_metrics", is_flag=True, help="The latest value of each metric.")
@click.option("--json", "as_json", is_flag=True, help="-o json; with --metrics, the history.")
@click.pass_context
def get(context: click.Context, name: str, output: str, show_metrics: bool, as_json: bool) -> None:
    """Show one TrainJob and its steps, or (--metrics) what its code logged."""
    output = "json" if as_json else output
    client = trainer_client(context)
    try:
        if show_metrics:
            points = client.get_job_metrics(name)
            emit(points, output, lambda: _metrics_table(points))
            return
        job = client.get_job(name)
    except TrainerError as error:
        fail(str(error), 1)
    emit(job, output, lambda: _job_table(job, _packages(client, job)))


@cli.command()
@click.argument("name")
@click.option("--step", default=f"{constants.NODE}-0", show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing lines until the job ends.")
@click.pass_context
def logs(context: click.Context, name: str, step: str, follow: bool) -> None:
    """Print a step's log. Ctrl-C stops following (exit 130); the job runs on."""
    try:
        for line in trainer_client(context).get_job_logs(name, step=step, follow=follow):
            click.echo(line)
    except (TrainerError, ValueError) as error:
        fail(str(error), 1)
    except KeyboardInterrupt:
        _stopped_watching(name)


def _status_detail(job: types.TrainJob) -> str:
    """Status, reported progress and metrics, and each step's state."""
    parts = [job.status]
    reported = job.trainer_status
    if reported and reported.progress_percentage is not None:
        parts.append(f"{reported.progress_percentage}%")
        parts.extend(f"{key}={value}" for key, value in reported.metrics.items())
    if job.steps:
        steps = ", ".join(f"{step.name} {step.status or constants.UNKNOWN}" for step in job.steps)
        parts.append(f"| {steps}")
    return " ".join(parts)


def status_line(job: types.TrainJob, elapsed: float) -> str:
    """One line on a job for logs and pipes: elapsed time, status, progress, step states."""
    return f"[{elapsed:5.0f}s] {job.name} {_status_detail(job)}"


def _show_progress(client: TrainerClient, name: str, deadline: float) -> types.TrainJob:
    """Until the job finishes or ``deadline`` (monotonic) passes: a live bar on a terminal, a
    status line every ``STATUS_LINE_SECONDS`` elsewhere. The last job seen."""
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn

    finished = FINISHED
    start = time.monotonic()
    if not stderr().is_terminal:
        next_line = start
        while True:
            job = client.get_job(name)
            now = time.monotonic()
            if job.status in finished or now >= next_line or now >= deadline:
                say(escape(status_line(job, now - start)))
                next_line = now + STATUS_LINE_SECONDS
            if job.status in finished or now >= deadline:
                return job
            time.sleep(min(PROGRESS_INTERVAL_SECONDS, max(deadline - now, 0)))
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"))
    with Progress(*columns, console=stderr(), transient=True) as progress:
        task = progress.add_task(name, total=100, detail="")
        while True:
            job = client.get_job(name)
            reported = job.trainer_status
            if reported and reported.progress_percentage is not None:
                progress.update(task, completed=reported.progress_percentage)
            progress.update(task, detail=_status_detail(job))
            now = time.monotonic()
            if job.status in finished or now >= deadline:
                return job
            time.sleep(min(PROGRESS_INTERVAL_SECONDS, max(deadline - now, 0)))


@cli.command()
@click.argument("name")
@click.option("--timeout", type=click.IntRange(min=1), default=600, show_default=True)
@click.pass_context
def wait(context: click.Context, name: str, timeout: int) -> None:
    """Wait up to --timeout seconds for NAME to finish; exit with its outcome (124: timeout).
    Ctrl-C stops waiting (exit 130); the job runs on."""
    client = trainer_client(context)
    deadline = time.monotonic() + timeout
    try:
        job = _show_progress(client, name, deadline)
        if job.status not in FINISHED:
            raise TimeoutError(f"timeout: TrainJob {name!r} is still {job.status} after {timeout}s")
        sys.exit(_outcome(client, name, max(deadline - time.monotonic(), 1.0)))
    except TimeoutError as error:
        fail(str(error), TIMEOUT_EXIT_CODE)
    except TrainerError as error:
        fail(str(error), 1)
    except KeyboardInterrupt:
        _stopped_watching(name)


@cli.command()
@click.argument("names", metavar="NAME...", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Delete every TrainJob.")
@click.pass_context
def delete(context: click.Context, names: tuple[str, ...], every: bool) -> None:
    """Delete each NAME (or --all) and end its processes; exit 1 if any was not found."""
    if bool(names) == every:
        fail("NAME...: give one or more TrainJob names, or --all (not both)")
    client = trainer_client(context)
    if every:
        names = tuple(job.name for job in client.list_jobs())
        if not names:
            say("No TrainJobs found")
    missing = False
    for name in names:
        try:
            client.delete_job(name)
        except TrainerError as error:
            complain(str(error))
            missing = True
            continue
        say(f"TrainJob {name} deleted")
    sys.exit(1 if missing else 0)


@cli.command()
@click.argument("names", metavar="NAME...", nargs=-1, required=True)
@click.pass_context
def stop(context: click.Context, names: tuple[str, ...]) -> None:
    """Stop each NAME: end its processes, keep it (Stopped) with its logs and metrics. Local
    jobs only (a cluster keeps no stopped job: delete it); exit 1 if any was not stopped."""
    client = trainer_client(context)
    refused = False
    for name in names:
        try:
            client.stop_job(name)
        except TrainerError as error:
            complain(str(error))
            refused = True
            continue
        say(f"TrainJob {name} stopped")
    sys.exit(1 if refused else 0)


@cli.command()
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def runtimes(context: click.Context, output: str) -> None:
    """List the training runtimes."""
    found = trainer_client(context).list_runtimes()

    def render() -> Table:
        columns = [
            column("NAME", name=True),
            column("FRAMEWORK"),
            column("TRAINER"),
            column("NODES"),
            column("DEVICE"),
            column("COUNT"),
        ]
        rows = [
            [
                runtime.name,
                runtime.trainer.framework,
                runtime.trainer.trainer_type.value,
                str(runtime.trainer.num_nodes),
                runtime.trainer.device,
                runtime.trainer.device_count,
            ]
            for runtime in found
        ]
        return table(columns, rows)

    emit(found, output, render)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8265, show_default=True)
@click.option(
    "--token",
    default=None,
    envvar="TRAINER_UI_TOKEN",
    help="Token the browser must present (default: none on loopback, generated otherwise).",
)
@click.option(
    "--read-only",
    is_flag=True,
    envvar="TRAINER_UI_READ_ONLY",
    help="No stop or delete (the in-cluster default).",
)
@click.option("--namespace", default=None, help="Kubernetes: the namespace to show.")
@click.option(
    "--history",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path.home() / ".local" / "state" / "trainer" / "ui-history.sqlite3",
    envvar="TRAINER_UI_HISTORY",
    show_default=True,
    help="Kubernetes: the SQLite file the sampled metric history is kept in.",
)
@click.option(
    "--history-days",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    envvar="TRAINER_UI_HISTORY_DAYS",
    show_default=True,
    help="Kubernetes: days the sampled metric history is kept.",
)
@click.pass_context
def ui(
    context: click.Context,
    host: str,
    port: int,
    token: str | None,
    read_only: bool,
    namespace: str | None,
    history: Path,
    history_days: float,
) -> None:
    """Serve the web UI: jobs, live logs, metric charts, runtimes. Ctrl-C stops it."""
    from trainer_sdk.client import TrainerClient
    from trainer_sdk.configs import KubernetesBackendConfig
    from trainer_sdk.ui import Access, UiServer, is_loopback, new_token

    if token is None and not is_loopback(host):
        token = new_token()
    client = (
        TrainerClient(KubernetesBackendConfig(namespace=namespace))
        if namespace is not None
        else trainer_client(context)
    )
    try:
        server = UiServer(
            client,
            Access(host, token),
            port,
            allow_delete=not read_only,
            history=history,
            retention_days=history_days,
        )
    except ValueError as error:
        fail(f"--{error}")
    except OSError as error:
        fail(f"--host/--port: cannot listen on {host}:{port}: {error}")
    say(f"trainer ui: open {server.url}")
    if token is not None:
        say("anyone with this URL (it holds the token) can use the UI")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass  # Ctrl-C: the documented way to stop it
    finally:
        server.server_close()


def main() -> None:
    """Console entry point."""
    cli(prog_name="trainer")
