"""``trainer apply -f FILE`` (TrainingRuntime, ClusterTrainingRuntime, TrainJob, like ``kubectl
apply``) and ``trainer get/delete runtime NAME``, so that a user's own runtime runs locally."""

from __future__ import annotations

import json
from pathlib import Path

import click

from trainer_sdk import constants
from trainer_sdk.cli.clients import trainer_client
from trainer_sdk.cli.output import column, fail, say, stdout, table
from trainer_sdk.errors import TrainerError

__all__ = ["apply", "delete_runtime", "get_runtime"]


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
    from trainer_sdk.manifests.files import read_objects

    try:
        objects = read_objects(path)
    except ValueError as error:
        fail(f"-f: {error}")
    runtimes = [doc for doc in objects if doc["kind"] != constants.TRAINJOB_KIND]
    jobs = [doc for doc in objects if doc["kind"] == constants.TRAINJOB_KIND]
    client = trainer_client(context)
    try:
        for doc in runtimes:
            created = client.apply_runtime(doc)
            click.echo(
                f"{doc['kind'].lower()}/{doc['metadata']['name']} "
                f"{'created' if created else 'configured'}"
            )
    except TrainerError as error:
        fail(str(error))
    for doc in jobs:
        try:
            name = client.submit(doc)
        except TrainerError as error:
            fail(str(error), 1)
        click.echo(f"trainjob/{name} created")


@click.command()
@click.argument("name")
@click.option("--output", "-o", type=click.Choice(["table", "json", "yaml"]), default="table")
@click.pass_context
def get_runtime(context: click.Context, name: str, output: str) -> None:
    """Show the runtime NAME (a TrainingRuntime shadows a ClusterTrainingRuntime of its name)."""
    from trainer_sdk.status.runtimes import runtime_from_manifest

    try:
        manifest = trainer_client(context).get_runtime_manifest(name)
    except TrainerError as error:
        fail(str(error), 1)
    if output == "json":
        click.echo(json.dumps(manifest, indent=2))
    elif output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(manifest, sort_keys=False))
    else:
        runtime = runtime_from_manifest(manifest)
        policy = manifest.get("spec", {}).get("template", {}).get("spec", {}).get("failurePolicy")
        headers = ("NAME", "KIND", "FRAMEWORK", "NODES", "DEVICE", "FAILURE POLICY")
        row = [
            runtime.name,
            runtime.kind.value,
            runtime.trainer.framework,
            str(runtime.trainer.num_nodes),
            runtime.trainer.device,
            json.dumps(policy) if policy else "-",
        ]
        columns = [column(header, name=header == "NAME") for header in headers]
        stdout().print(table(columns, [row]))


@click.command()
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice([constants.TRAINING_RUNTIME_KIND, constants.CLUSTER_TRAINING_RUNTIME_KIND]),
)
@click.pass_context
def delete_runtime(context: click.Context, name: str, kind: str | None) -> None:
    """Delete the applied runtime NAME (built-in runtimes stay)."""
    try:
        deleted = trainer_client(context).delete_runtime(name, kind)
    except KeyError:
        fail(f"runtime {name!r} was never applied", 1)
    except (TrainerError, ValueError) as error:
        fail(str(error), 1)
    say(f"{deleted.lower()}/{name} deleted")
