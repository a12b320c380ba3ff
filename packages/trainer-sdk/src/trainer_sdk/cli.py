"""The ``trainer`` command: thin wrappers over ``TrainerClient``; exit code = job outcome."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Column, Table

from trainer_sdk import constants, types
from trainer_sdk.client import TrainerClient
from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.errors import JobFailedError, TrainerError
from trainer_sdk.trainjobs import build_trainjob_manifest, command_for_code, generate_name

__all__ = ["cli", "main"]

_console = Console()
_errors = Console(stderr=True, soft_wrap=True)
OUTPUTS = click.Choice(["table", "json", "yaml"])
PROGRESS_INTERVAL_SECONDS = 0.5


def _client(context: click.Context) -> TrainerClient:
    backend = context.obj["backend"]
    if backend == "local":
        return TrainerClient(LocalBackendConfig(**context.obj["local"]))
    if backend == "kubernetes":
        return TrainerClient(KubernetesBackendConfig())
    return (
        TrainerClient(LocalBackendConfig(**context.obj["local"]))
        if context.obj["local"]
        else TrainerClient()
    )


def _plain(value: Any) -> Any:
    """Dataclasses, enums and datetimes as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        document = {
            field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
        if isinstance(value, types.RuntimeTrainer):
            document["command"] = list(value.command)
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


def _name_column() -> Column:
    """Names are what users copy: never cut short, wrapped if they must be."""
    return Column("NAME", no_wrap=False, overflow="fold", min_width=12)


def _jobs_table(jobs: list[types.TrainJob]) -> Table:
    table = Table(_name_column(), "STATUS", "RUNTIME", "NODES", "PROGRESS", "CREATED")
    for job in jobs:
        progress = job.trainer_status.progress_percentage if job.trainer_status else None
        table.add_row(
            job.name,
            job.status,
            job.runtime.name,
            str(job.num_nodes),
            "" if progress is None else f"{progress}%",
            job.creation_timestamp.isoformat(),
        )
    return table


def _job_table(job: types.TrainJob) -> Table:
    table = Table(
        "STEP",
        "STATUS",
        "POD",
        "DEVICE",
        "COUNT",
        title=f"{job.name}: {job.status}",
        caption=job.message,
    )
    for step in job.steps:
        table.add_row(step.name, step.status or "", step.pod_name, step.device, step.device_count)
    return table


def _fail(message: str, code: int = 2) -> None:
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


def _load_function(target: str) -> Callable[..., Any]:
    module_name, _, function_name = target.partition(":")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        _fail(f"TARGET: cannot import module {module_name!r}: {error}")
    function = getattr(module, function_name, None)
    if not callable(function):
        _fail(f"TARGET: module {module_name!r} has no function {function_name!r}")
    return function  # type: ignore[return-value]


def _manifest_from_file(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The TrainJob in ``path``, and the runtime it references if the file holds that too."""
    if not path.is_file():
        _fail(f"-f: no such file {str(path)!r}")
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    except yaml.YAMLError as error:
        _fail(f"-f: {path} is not valid YAML: {error}")
    jobs = [
        doc
        for doc in documents
        if isinstance(doc, dict) and doc.get("kind") == constants.TRAINJOB_KIND
    ]
    if len(jobs) != 1:
        _fail(f"-f: expected exactly one TrainJob in {path}, found {len(jobs)}")
    reference = (jobs[0].get("spec") or {}).get("runtimeRef") or {}
    runtimes = [
        doc
        for doc in documents
        if isinstance(doc, dict)
        and doc.get("kind")
        in (constants.TRAINING_RUNTIME_KIND, constants.CLUSTER_TRAINING_RUNTIME_KIND)
        and (doc.get("metadata") or {}).get("name") == reference.get("name")
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


def _follow_all(client: TrainerClient, name: str) -> None:
    """Print every step's lines as they come, each prefixed with its step."""
    steps = [step.name for step in client.get_job(name).steps]
    lock = threading.Lock()

    def follow(step: str, lines: Iterator[str]) -> None:
        for line in lines:
            with lock:
                click.echo(f"[{step}] {line}" if len(steps) > 1 else line)

    threads = [
        threading.Thread(target=follow, args=(step, client.get_job_logs(name, step, follow=True)))
        for step in steps
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _outcome(client: TrainerClient, name: str, timeout: int) -> int:
    try:
        job = client.wait_for_job_status(
            name, {constants.TRAINJOB_COMPLETE}, timeout=timeout, polling_interval=1
        )
    except JobFailedError as error:
        _errors.print(f"[red]{error}[/red]", highlight=False)
        return 1
    _errors.print(f"TrainJob {job.name}: [green]{job.status}[/green]", highlight=False)
    return 0


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
    """Run TARGET (FILE.py or module:function) or -f TRAINJOB.yaml; exit with the job's outcome."""
    if (target is None) == (manifest_file is None):
        _fail("give exactly one of TARGET (FILE.py or module:function) and -f TRAINJOB.yaml")
    env = _parse_env(env_pairs)
    if detach:
        context.obj["local"]["detach"] = True
    client = _client(context)
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
        job_name = client.submit(manifest, runtime_manifest)
    except (TrainerError, ValueError, NotImplementedError) as error:
        _fail(str(error))
    _errors.print(f"TrainJob {job_name} created", highlight=False)
    if detach:
        click.echo(job_name)
        return
    _follow_all(client, job_name)
    sys.exit(_outcome(client, job_name, timeout))


def _target_manifest(
    target: str, runtime: types.Runtime, name: str | None, env: dict[str, str]
) -> dict[str, Any]:
    job_name = name or generate_name()
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            _fail(f"TARGET: no such file {target!r}")
        manifest = build_trainjob_manifest(job_name, runtime)
        trainer = manifest["spec"].setdefault("trainer", {})
        trainer["command"] = command_for_code(runtime, path.read_text(), path.name)
        if env:
            trainer["env"] = [{"name": key, "value": value} for key, value in env.items()]
        return manifest
    if ":" not in target:
        _fail(f"TARGET: expected FILE.py or module:function, got {target!r}")
    trainer_spec = types.CustomTrainer(func=_load_function(target), env=env or None)
    return build_trainjob_manifest(job_name, runtime, trainer_spec)


@cli.command(name="list")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def list_jobs(context: click.Context, output: str) -> None:
    """List TrainJobs with their status and runtime."""
    jobs = _client(context).list_jobs()
    _emit(jobs, output, lambda: _jobs_table(jobs))


@cli.command()
@click.argument("name")
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def get(context: click.Context, name: str, output: str) -> None:
    """Show one TrainJob and its steps."""
    try:
        job = _client(context).get_job(name)
    except TrainerError as error:
        _fail(str(error), 1)
    _emit(job, output, lambda: _job_table(job))


@cli.command()
@click.argument("name")
@click.option("--step", default=f"{constants.NODE}-0", show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing lines until the job ends.")
@click.pass_context
def logs(context: click.Context, name: str, step: str, follow: bool) -> None:
    """Print a step's log."""
    try:
        for line in _client(context).get_job_logs(name, step=step, follow=follow):
            click.echo(line)
    except (TrainerError, ValueError) as error:
        _fail(str(error), 1)


def _show_progress(client: TrainerClient, name: str, timeout: int) -> None:
    """A live bar of the job's reported progress until it finishes (or ``timeout`` passes)."""
    finished = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED)
    deadline = time.monotonic() + timeout
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"))
    with Progress(*columns, console=_errors, transient=True) as progress:
        task = progress.add_task(name, total=100, detail="")
        while time.monotonic() < deadline:
            job = client.get_job(name)
            reported = job.trainer_status
            detail = job.status
            if reported and reported.progress_percentage is not None:
                progress.update(task, completed=reported.progress_percentage)
                metrics = " ".join(f"{key}={value}" for key, value in reported.metrics.items())
                detail = f"{job.status} {reported.progress_percentage}% {metrics}".strip()
            progress.update(task, detail=detail)
            if job.status in finished:
                return
            time.sleep(PROGRESS_INTERVAL_SECONDS)


@cli.command()
@click.argument("name")
@click.option("--timeout", type=click.IntRange(min=1), default=600, show_default=True)
@click.pass_context
def wait(context: click.Context, name: str, timeout: int) -> None:
    """Wait for NAME to finish and exit with its outcome."""
    client = _client(context)
    try:
        _show_progress(client, name, timeout)
        sys.exit(_outcome(client, name, timeout))
    except TimeoutError as error:
        _fail(str(error), 124)
    except TrainerError as error:
        _fail(str(error), 1)


@cli.command()
@click.argument("name")
@click.pass_context
def delete(context: click.Context, name: str) -> None:
    """Delete NAME and end its processes."""
    try:
        _client(context).delete_job(name)
    except TrainerError as error:
        _fail(str(error), 1)
    _errors.print(f"TrainJob {name} deleted", highlight=False)


@cli.command()
@click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)
@click.pass_context
def runtimes(context: click.Context, output: str) -> None:
    """List the training runtimes."""
    found = _client(context).list_runtimes()

    def table() -> Table:
        rows = Table(_name_column(), "FRAMEWORK", "TRAINER", "NODES", "DEVICE", "COUNT")
        for runtime in found:
            trainer = runtime.trainer
            rows.add_row(
                runtime.name,
                trainer.framework,
                trainer.trainer_type.value,
                str(trainer.num_nodes),
                trainer.device,
                trainer.device_count,
            )
        return rows

    _emit(found, output, table)


def main() -> None:
    """Console entry point."""
    cli(prog_name="trainer")
