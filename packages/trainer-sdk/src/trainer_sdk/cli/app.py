"""The ``trainer`` command: thin wrappers over ``TrainerClient``; exit code = job outcome."""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import importlib.util
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Column, Table

from trainer_sdk import constants, types
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.client import TrainerClient, select_backend_config
from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.errors import JobFailedError, TrainerError
from trainer_sdk.metrics import MetricPoint
from trainer_sdk.trainjobs import build_trainjob_manifest, command_for_code, generate_name

__all__ = ["cli", "main", "status_line"]

_console = Console()
_errors = Console(stderr=True, soft_wrap=True)
OUTPUTS = click.Choice(["table", "json", "yaml"])
PROGRESS_INTERVAL_SECONDS = 0.5
NAME_WRAP_WIDTH = 24  # a name column may wrap down to this width before columns are dropped
STATUS_LINE_SECONDS = 5.0  # a non-TTY wait prints a status line this often
INTERRUPTED_EXIT_CODE = 130
TIMEOUT_EXIT_CODE = 124
_FILE_FUNCTION = re.compile(r"^(?P<file>.+\.py):(?P<function>[A-Za-z_]\w*)$")


def _client(context: click.Context, stop_on_exit: bool = False) -> TrainerClient:
    """The client for ``--backend``; local jobs end with this command when ``stop_on_exit``."""
    backend = context.obj["backend"]
    local = {**context.obj["local"], **({"stop_on_exit": True} if stop_on_exit else {})}
    if backend == "auto":
        chosen = LocalBackendConfig if context.obj["local"] else type(select_backend_config())
        backend = "kubernetes" if chosen is KubernetesBackendConfig else "local"
    if backend == "kubernetes":
        return TrainerClient(KubernetesBackendConfig())
    return TrainerClient(LocalBackendConfig(**local))


def _plain(value: Any) -> Any:
    """Dataclasses, enums and datetimes as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        document = {
            field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
        if isinstance(value, types.RuntimeTrainer):
            document["command"] = list(value.command)
        if isinstance(value, types.TrainJob):  # the runtime's name: its command is a template
            document["runtime"] = value.runtime.name  # with {func_code} holes, not this job's
        return {key: item for key, item in document.items() if not key.startswith("_")}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def _emit(value: Any, output: str, table: Callable[[], Table]) -> None:
    if output == "json":
        click.echo(json.dumps(_plain(value), indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(_plain(value), sort_keys=False))
    else:
        _console.print(table())


def _column(header: str, *, name: bool = False) -> Column:
    """A column that wraps instead of cutting: names (``name``) may fold anywhere, other values
    only between words."""
    return Column(header, overflow="fold" if name else "ellipsis", no_wrap=not name)


def _needed_width(column: Column, cells: list[str]) -> int:
    """The characters a column takes: its widest cell (a name column wraps at
    ``NAME_WRAP_WIDTH``), its padding and its border."""
    widest = max([len(str(column.header)), *map(len, cells)])
    return (min(widest, NAME_WRAP_WIDTH) if column.overflow == "fold" else widest) + 3


def _table(columns: list[Column], rows: list[list[str]], **options: Any) -> Table:
    """A table of ``rows``; within the console's width (80 when not a terminal), columns are
    dropped from the right (never a name column) until it fits, and names wrap; boxed on a
    terminal, plain columns elsewhere."""
    keep = list(range(len(columns)))
    while True:
        needed = 1 + sum(_needed_width(columns[i], [row[i] for row in rows]) for i in keep)
        droppable = [i for i in keep if columns[i].overflow != "fold"]
        if needed <= _console.width or len(droppable) <= 1:
            break
        keep.remove(droppable[-1])
    if not _console.is_terminal:  # a pipe or a file: kubectl's plain columns, no box
        options = {**options, "box": None, "show_edge": False, "pad_edge": False}
    table = Table(*(columns[i] for i in keep), **options)
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table


def _age(created: datetime, now: datetime) -> str:
    """kubectl's AGE: 45s, 12m, 3h5m, 2d4h."""
    seconds = max(0, int((now - created).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600}h"


def _jobs_table(jobs: list[types.TrainJob], now: datetime | None = None) -> Table:
    """The jobs as listed (``list`` sorts them newest first)."""
    now = now or datetime.now(timezone.utc)
    rows = []
    for job in jobs:
        progress = job.trainer_status.progress_percentage if job.trainer_status else None
        rows.append(
            [
                job.name,
                job.status,
                job.runtime.name,
                str(job.num_nodes),
                "" if progress is None else f"{progress}%",
                _age(job.creation_timestamp, now),
            ]
        )
    columns = [
        _column("NAME", name=True),
        _column("STATUS"),
        _column("RUNTIME", name=True),
        _column("NODES"),
        _column("PROGRESS"),
        _column("AGE"),
    ]
    return _table(columns, rows)


def _job_table(job: types.TrainJob) -> Table:
    rows = [
        [step.name, step.status or "", step.device, step.device_count, step.pod_name]
        for step in job.steps
    ]
    columns = [
        _column("STEP", name=True),
        _column("STATUS"),
        _column("DEVICE"),
        _column("COUNT"),
        _column("POD", name=True),
    ]
    caption = "\n".join(filter(None, [job.message, _checkpoint_line(job)]))
    return _table(columns, rows, title=f"{job.name}: {job.status}", caption=caption or None)


def _checkpoint_line(job: types.TrainJob) -> str | None:
    """The latest checkpoint's step and age (``trainer_sdk.checkpoint``), when there is one."""
    found = job.checkpoint
    if found is None or found.step is None:
        return None
    age = f", {_age(found.saved_at, datetime.now(timezone.utc))} ago" if found.saved_at else ""
    resumed = found.resumed_from_step
    origin = f", resumed from step {resumed}" if resumed is not None else ""
    return f"checkpoint: step {found.step}{age} (attempt {found.attempt}{origin})"


def _fail(message: str, code: int = 2) -> NoReturn:
    _errors.print(f"[red]error:[/red] {message}", highlight=False)
    sys.exit(code)


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
            _fail(f"--env: expected NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def _import_file(path: Path) -> Any:
    """The module in ``path``, imported (its top level runs here, as an import would)."""
    if not path.is_file():
        _fail(f"TARGET: no such file {str(path)!r}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        _fail(f"TARGET: cannot import {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: report whatever it raised
        _fail(f"TARGET: importing {str(path)!r} raised {type(error).__name__}: {error}")
    return module


def _load_function(target: str) -> Callable[..., Any]:
    """``module:function`` or ``FILE.py:function`` as the function itself."""
    if match := _FILE_FUNCTION.match(target):
        where, function_name = f"file {match['file']!r}", match["function"]
        module = _import_file(Path(match["file"]))
    else:
        module_name, _, function_name = target.partition(":")
        where = f"module {module_name!r}"
        sys.path.insert(0, str(Path.cwd()))
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            _fail(f"TARGET: cannot import module {module_name!r}: {error}")
    function = getattr(module, function_name, None)
    if not callable(function):
        _fail(f"TARGET: {where} has no function {function_name!r}")
    return function  # type: ignore[no-any-return]  # callable() checked it


def _runs_nothing(source: str) -> list[str] | None:
    """The functions a script defines when its top level only defines things (so running it
    would do nothing), else None."""
    tree = ast.parse(source)
    defined = [
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    inert = (
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Import,
        ast.ImportFrom,
        ast.Pass,
    )
    for node in tree.body:
        if isinstance(node, inert):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not any(
            isinstance(child, ast.Call) for child in ast.walk(node)
        ):
            continue
        return None
    return defined or None


def _manifest_from_file(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The TrainJob in ``path``, and the runtime it references if the file holds that too.

    The file is read as the API server reads YAML (``trainer_api.load_yaml``: UTF-8, no
    excessive aliasing, no duplicate keys) and each TrainJob and runtime in it must parse.
    """
    import trainer_api

    if not path.is_file():
        _fail(f"-f: no such file {str(path)!r}")
    try:
        documents = trainer_api.load_yaml(path.read_bytes())
    except OSError as error:
        _fail(f"-f: cannot read {path}: {error.strerror}")
    except trainer_api.ValidationError as error:
        _fail(f"-f: {path}: {error}")  # "invalid YAML: ..." or "not UTF-8 text: ..."
    kinds = (
        constants.TRAINJOB_KIND,
        constants.TRAINING_RUNTIME_KIND,
        constants.CLUSTER_TRAINING_RUNTIME_KIND,
    )
    ours = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") in kinds]
    problems = []
    for doc in ours:
        try:
            trainer_api.parse(doc)
        except trainer_api.ValidationError as error:
            problems += [f"{doc['kind']}: {item}" for item in error.errors]
    if problems:
        _fail(f"-f: {path} is not valid:\n  " + "\n  ".join(problems))
    jobs = [doc for doc in ours if doc["kind"] == constants.TRAINJOB_KIND]
    if len(jobs) != 1:
        _fail(f"-f: expected exactly one TrainJob in {path}, found {len(jobs)}")
    reference = jobs[0]["spec"]["runtimeRef"]
    runtimes = [
        doc
        for doc in ours
        if doc is not jobs[0] and (doc.get("metadata") or {}).get("name") == reference["name"]
    ]
    return jobs[0], runtimes[0] if runtimes else None


def _override(
    manifest: dict[str, Any], nodes: int | None, procs: int | None, env: dict[str, str]
) -> None:
    trainer = manifest.setdefault("spec", {}).setdefault("trainer", {})
    if nodes is not None:
        trainer["numNodes"] = nodes
    if procs is not None:
        trainer["numProcPerNode"] = procs
    if env:
        kept = [item for item in trainer.get("env") or [] if item.get("name") not in env]
        trainer["env"] = kept + [{"name": key, "value": value} for key, value in env.items()]


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
    """Wait up to ``timeout`` seconds for the job's end; print it; 0 Complete, 1 Failed."""
    try:
        job = client.wait_for_job_status(
            name,
            {constants.TRAINJOB_COMPLETE},
            timeout=timeout,  # type: ignore[arg-type]  # upstream annotates int; any number works
            polling_interval=min(1, timeout / 2),  # type: ignore[arg-type]
        )
    except JobFailedError as error:
        _errors.print(f"[red]{escape(str(error))}[/red]", highlight=False)
        return 1
    _errors.print(f"TrainJob {job.name}: [green]{job.status}[/green]", highlight=False)
    return 0


def _interrupted(client: TrainerClient, name: str | None) -> NoReturn:
    """Ctrl-C: stop the job (locally it is kept, Failed, with its logs), one line, exit 130."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this
    try:
        if name is None:
            line = "interrupted before a TrainJob was created"
        elif isinstance(client.backend, LocalBackend):
            client.backend.close()  # ends the jobs of this command (stop_on_exit)
            line = f"TrainJob {name} stopped (interrupted); `trainer logs {name}` shows its logs"
        else:
            client.delete_job(name)
            line = f"TrainJob {name} deleted (interrupted)"
    finally:
        signal.signal(signal.SIGINT, previous)
    _errors.print(line, highlight=False)
    sys.exit(INTERRUPTED_EXIT_CODE)


def _stopped_watching(name: str) -> NoReturn:
    """Ctrl-C on a command that only watches NAME: the job runs on; one line, exit 130."""
    _errors.print(f"stopped watching TrainJob {name} (interrupted); it runs on", highlight=False)
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
        _fail(
            "give exactly one of TARGET (FILE.py, FILE.py:function or module:function) "
            "and -f TRAINJOB.yaml"
        )
    env = _parse_env(env_pairs)
    client = _client(context, stop_on_exit=not detach)
    job_name: str | None = None
    try:
        job_name = _submit(
            client, target, manifest_file, nodes, procs_per_node, runtime_name, env, name
        )
        _errors.print(f"TrainJob {job_name} created", highlight=False)
        if detach:
            click.echo(job_name)
            return
        started = time.monotonic()
        _follow_all(client, job_name, timeout)
        code = _outcome(client, job_name, max(1, round(timeout - time.monotonic() + started)))
    except TimeoutError as error:
        _fail(str(error), 124)
    except KeyboardInterrupt:
        _interrupted(client, job_name)
    sys.exit(code)


def _submit(
    client: TrainerClient,
    target: str | None,
    manifest_file: Path | None,
    nodes: int | None,
    procs_per_node: int | None,
    runtime_name: str | None,
    env: dict[str, str],
    name: str | None,
) -> str:
    """Create the TrainJob ``run`` was asked for; exit 2 on bad input."""
    try:
        if manifest_file is not None:
            manifest, runtime_manifest = _manifest_from_file(manifest_file)
            if runtime_name:
                runtime_manifest = None
                manifest.setdefault("spec", {})["runtimeRef"] = {"name": runtime_name}
            if name:
                manifest.setdefault("metadata", {})["name"] = name
        else:
            runtime = client.get_runtime(runtime_name or constants.DEFAULT_TRAINING_RUNTIME)
            manifest = _target_manifest(str(target), runtime, name, env)
            runtime_manifest = None
        _override(manifest, nodes, procs_per_node, env if manifest_file is not None else {})
        return client.submit(manifest, runtime_manifest)
    except (TrainerError, ValueError, NotImplementedError) as error:
        _fail(str(error))


def _target_manifest(
    target: str, runtime: types.Runtime, name: str | None, env: dict[str, str]
) -> dict[str, Any]:
    job_name = name or generate_name()
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            _fail(f"TARGET: no such file {target!r}")
        source = path.read_text()
        try:
            defined = _runs_nothing(source)
        except SyntaxError as error:
            _fail(f"TARGET: {target} is not valid Python: {error}")
        if defined:
            _fail(
                f"TARGET: {target} defines {', '.join(defined)} but runs nothing; "
                f"run a function with `trainer run {target}:{defined[-1]}`, or call it in the file"
            )
        manifest = build_trainjob_manifest(job_name, runtime)
        trainer = manifest["spec"].setdefault("trainer", {})
        trainer["command"] = command_for_code(runtime, source, path.name)
        if env:
            trainer["env"] = [{"name": key, "value": value} for key, value in env.items()]
        return manifest
    if ":" not in target:
        _fail(f"TARGET: expected FILE.py, FILE.py:function or module:function, got {target!r}")
    trainer_spec = types.CustomTrainer(func=_load_function(target), env=env or None)
    return build_trainjob_manifest(job_name, runtime, trainer_spec)


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
    jobs = sorted(_client(context).list_jobs(), key=lambda job: job.creation_timestamp)[::-1]
    if not jobs and output in ("table", "name"):
        _errors.print("No TrainJobs found", highlight=False)
    elif output == "name":
        click.echo("".join(f"trainjob/{job.name}\n" for job in jobs), nl=False)
    else:
        _emit(jobs, output, lambda: _jobs_table(jobs))


def _metrics_table(points: list[MetricPoint]) -> Table:
    """The latest value of each metric and the step it was logged at."""
    latest: dict[str, tuple[float, int]] = {}
    for point in points:
        for key, value in point.values.items():
            latest[key] = (value, point.step)
    rows = [[key, f"{value:.6g}", str(step)] for key, (value, step) in sorted(latest.items())]
    return _table([_column("METRIC", name=True), _column("VALUE"), _column("STEP")], rows)


@cli.command()
@click.argument("name")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.option("--metrics", "show_metrics", is_flag=True, help="The latest value of each metric.")
@click.option("--json", "as_json", is_flag=True, help="-o json; with --metrics, the history.")
@click.pass_context
def get(context: click.Context, name: str, output: str, show_metrics: bool, as_json: bool) -> None:
    """Show one TrainJob and its steps, or (--metrics) what its code logged."""
    output = "json" if as_json else output
    client = _client(context)
    try:
        if show_metrics:
            points = client.get_job_metrics(name)
            _emit(points, output, lambda: _metrics_table(points))
            return
        job = client.get_job(name)
    except TrainerError as error:
        _fail(str(error), 1)
    _emit(job, output, lambda: _job_table(job))


@cli.command()
@click.argument("name")
@click.option("--step", default=f"{constants.NODE}-0", show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing lines until the job ends.")
@click.pass_context
def logs(context: click.Context, name: str, step: str, follow: bool) -> None:
    """Print a step's log. Ctrl-C stops following (exit 130); the job runs on."""
    try:
        for line in _client(context).get_job_logs(name, step=step, follow=follow):
            click.echo(line)
    except (TrainerError, ValueError) as error:
        _fail(str(error), 1)
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
    finished = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED)
    start = time.monotonic()
    if not _errors.is_terminal:
        next_line = start
        while True:
            job = client.get_job(name)
            now = time.monotonic()
            if job.status in finished or now >= next_line or now >= deadline:
                _errors.print(escape(status_line(job, now - start)), highlight=False)
                next_line = now + STATUS_LINE_SECONDS
            if job.status in finished or now >= deadline:
                return job
            time.sleep(min(PROGRESS_INTERVAL_SECONDS, max(deadline - now, 0)))
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"))
    with Progress(*columns, console=_errors, transient=True) as progress:
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
    client = _client(context)
    deadline = time.monotonic() + timeout
    try:
        job = _show_progress(client, name, deadline)
        if job.status not in (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED):
            raise TimeoutError(f"timeout: TrainJob {name!r} is still {job.status} after {timeout}s")
        sys.exit(_outcome(client, name, max(deadline - time.monotonic(), 1.0)))
    except TimeoutError as error:
        _fail(str(error), TIMEOUT_EXIT_CODE)
    except TrainerError as error:
        _fail(str(error), 1)
    except KeyboardInterrupt:
        _stopped_watching(name)


@cli.command()
@click.argument("names", metavar="NAME...", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Delete every TrainJob.")
@click.pass_context
def delete(context: click.Context, names: tuple[str, ...], every: bool) -> None:
    """Delete each NAME (or --all) and end its processes; exit 1 if any was not found."""
    if bool(names) == every:
        _fail("NAME...: give one or more TrainJob names, or --all (not both)")
    client = _client(context)
    if every:
        names = tuple(job.name for job in client.list_jobs())
        if not names:
            _errors.print("No TrainJobs found", highlight=False)
    missing = False
    for name in names:
        try:
            client.delete_job(name)
        except TrainerError as error:
            _errors.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
            missing = True
            continue
        _errors.print(f"TrainJob {name} deleted", highlight=False)
    sys.exit(1 if missing else 0)


@cli.command()
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def runtimes(context: click.Context, output: str) -> None:
    """List the training runtimes."""
    found = _client(context).list_runtimes()

    def table() -> Table:
        columns = [
            _column("NAME", name=True),
            _column("FRAMEWORK"),
            _column("TRAINER"),
            _column("NODES"),
            _column("DEVICE"),
            _column("COUNT"),
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
        return _table(columns, rows)

    _emit(found, output, table)


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
@click.pass_context
def ui(
    context: click.Context,
    host: str,
    port: int,
    token: str | None,
    read_only: bool,
    namespace: str | None,
) -> None:
    """Serve the web UI: jobs, live logs, metric charts, runtimes. Ctrl-C stops it."""
    from trainer_sdk.ui import Access, UiServer, is_loopback, new_token

    if token is None and not is_loopback(host):
        token = new_token()
    client = (
        TrainerClient(KubernetesBackendConfig(namespace=namespace))
        if namespace is not None
        else _client(context)
    )
    try:
        server = UiServer(client, Access(host, token), port, allow_delete=not read_only)
    except ValueError as error:
        _fail(f"--{error}")
    except OSError as error:
        _fail(f"--host/--port: cannot listen on {host}:{port}: {error}")
    _errors.print(f"trainer ui: open {server.url}", highlight=False, soft_wrap=True)
    if token is not None:
        _errors.print("anyone with this URL (it holds the token) can use the UI", highlight=False)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass  # Ctrl-C: the documented way to stop it
    finally:
        server.server_close()


def main() -> None:
    """Console entry point."""
    cli(prog_name="trainer")
