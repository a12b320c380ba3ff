"""``trainer apply -f FILE`` (TrainingRuntime, ClusterTrainingRuntime, TrainJob, like ``kubectl
apply``) and ``trainer get/delete runtime NAME``, so that a user's own runtime runs locally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table

from trainer_sdk import constants
from trainer_sdk.backends.local import runtime_store
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.cli.app import _client, _fail
from trainer_sdk.errors import TrainerError
from trainer_sdk.runtimes import runtime_from_manifest

__all__ = ["apply", "delete_runtime", "get_runtime", "with_runtime_noun"]

_console = Console()
_errors = Console(stderr=True, soft_wrap=True)
_APPLIED = (
    constants.TRAINING_RUNTIME_KIND,
    constants.CLUSTER_TRAINING_RUNTIME_KIND,
    constants.TRAINJOB_KIND,
)


def _documents(path: Path) -> list[dict[str, Any]]:
    """The objects in ``path``, each parsed as the API server would (every problem at once)."""
    import trainer_api

    try:
        documents = trainer_api.load_yaml(path.read_bytes())
    except OSError as error:
        _fail(f"-f: cannot read {path}: {error.strerror}")
    except trainer_api.ValidationError as error:
        _fail(f"-f: {path}: {error}")
    problems = []
    objects = [doc for doc in documents if doc is not None]
    for index, doc in enumerate(objects):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in _APPLIED:
            problems.append(
                f"document {index}: kind: expected one of {', '.join(_APPLIED)}, got {kind!r}"
            )
            continue
        try:
            trainer_api.parse(doc)
            runtime_store.check_name(str(doc["metadata"].get("name", "")))
        except trainer_api.ValidationError as error:
            problems += [f"{kind} {index}: {item}" for item in error.errors]
        except ValueError as error:
            problems.append(f"{kind} {index}: {error}")
    if problems:
        _fail(f"-f: {path} is not valid:\n  " + "\n  ".join(problems))
    if not objects:
        _fail(f"-f: {path} holds no object")
    return objects


def _local(context: click.Context, what: str) -> LocalBackend:
    backend = _client(context).backend
    if not isinstance(backend, LocalBackend):
        _fail(f"{what}: on Kubernetes use kubectl; trainer keeps runtimes for the local backend")
    return backend


@click.command()
@click.option(
    "-f",
    "--filename",
    "path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A YAML file of TrainingRuntimes, ClusterTrainingRuntimes and TrainJobs.",
)
@click.pass_context
def apply(context: click.Context, path: Path) -> None:
    """Create or update the runtimes in FILE and create its TrainJobs (runtimes first)."""
    objects = _documents(path)
    runtimes = [doc for doc in objects if doc["kind"] != constants.TRAINJOB_KIND]
    jobs = [doc for doc in objects if doc["kind"] == constants.TRAINJOB_KIND]
    client = _client(context)
    if runtimes:
        store = _local(context, "apply").runtime_store
        for doc in runtimes:
            created = store.apply(doc)
            click.echo(
                f"{doc['kind'].lower()}/{doc['metadata']['name']} "
                f"{'created' if created else 'configured'}"
            )
    for doc in jobs:
        try:
            name = client.submit(doc)
        except TrainerError as error:
            _fail(str(error), 1)
        click.echo(f"trainjob/{name} created")


def with_runtime_noun(jobs: click.Command, runtime: click.Command) -> click.Command:
    """``jobs`` (``trainer get NAME``) that also takes ``trainer get runtime NAME``: when the first
    argument is ``runtime``, the rest goes to ``runtime``."""

    class _Command(click.Command):
        def make_context(
            self,
            info_name: str | None,
            args: list[str],
            parent: click.Context | None = None,
            **extra: Any,
        ) -> click.Context:
            if args[:1] == ["runtime"]:
                return runtime.make_context(f"{info_name} runtime", args[1:], parent, **extra)
            return super().make_context(info_name, args, parent, **extra)

    return _Command(
        jobs.name,
        callback=jobs.callback,
        params=jobs.params,
        help=f"{jobs.help}\n\n'{jobs.name} runtime NAME': {runtime.help}",
        short_help=jobs.short_help,
    )


@click.command()
@click.argument("name")
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table")
@click.pass_context
def get_runtime(context: click.Context, name: str, output: str) -> None:
    """Show the runtime NAME (a TrainingRuntime shadows a ClusterTrainingRuntime of its name)."""
    client = _client(context)
    try:
        runtime = client.get_runtime(name)
    except TrainerError as error:
        _fail(str(error), 1)
    manifest = client.backend._runtime_manifests()[name]
    if output == "json":
        click.echo(json.dumps(manifest, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(manifest, sort_keys=False))
    else:
        table = Table("NAME", "KIND", "FRAMEWORK", "NODES", "DEVICE", "FAILURE POLICY")
        policy = manifest.get("spec", {}).get("template", {}).get("spec", {}).get("failurePolicy")
        table.add_row(
            runtime.name,
            runtime_from_manifest(manifest).kind.value,
            runtime.trainer.framework,
            str(runtime.trainer.num_nodes),
            runtime.trainer.device,
            json.dumps(policy) if policy else "-",
        )
        _console.print(table)


@click.command()
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice([constants.TRAINING_RUNTIME_KIND, constants.CLUSTER_TRAINING_RUNTIME_KIND]),
)
@click.pass_context
def delete_runtime(context: click.Context, name: str, kind: str | None) -> None:
    """Delete the applied runtime NAME (built-in runtimes stay)."""
    store = _local(context, "delete runtime").runtime_store
    try:
        deleted = store.delete(name, kind)
    except KeyError:
        _fail(f"runtime {name!r} was never applied", 1)
    except ValueError as error:
        _fail(str(error), 1)
    _errors.print(f"{deleted.lower()}/{name} deleted", highlight=False)
