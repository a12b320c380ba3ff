"""``trainer volumes``: the local persistent volume claims (size, jobs using them), and deleting
one."""

from __future__ import annotations

import json
import sys

import click

from trainer_sdk.cli.clients import trainer_client
from trainer_sdk.cli.output import column, complain, say, size, stdout, table

__all__ = ["volumes"]

_HEADERS = ("NAMESPACE", "CLAIM", "SIZE", "JOBS", "PATH")


@click.group(invoke_without_command=True)
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def volumes(context: click.Context, output: str) -> None:
    """The local persistent volume claims: they outlive jobs, as claims do in a cluster."""
    if context.invoked_subcommand is not None:
        return
    from trainer_sdk.errors import TrainerError

    try:
        claims = trainer_client(context).list_volumes()
    except TrainerError as error:  # a cluster: its claims are kubectl's
        complain(str(error))
        sys.exit(1)
    if output == "json":
        document = [
            {
                "namespace": claim.namespace,
                "name": claim.name,
                "path": str(claim.path),
                "sizeBytes": claim.size_bytes,
                "jobs": list(claim.jobs),
            }
            for claim in claims
        ]
        click.echo(json.dumps(document, indent=2))
        return
    columns = [column(header, name=header in ("CLAIM", "PATH")) for header in _HEADERS]
    rows = [
        [
            claim.namespace,
            claim.name,
            size(claim.size_bytes),
            ", ".join(claim.jobs) or "-",
            str(claim.path),
        ]
        for claim in claims
    ]
    stdout().print(table(columns, rows))


@volumes.command()
@click.argument("claim")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.pass_context
def delete(context: click.Context, claim: str, namespace: str) -> None:
    """Delete CLAIM's data (refused while a running job mounts it)."""
    from trainer_sdk.errors import TrainerError

    try:
        path = trainer_client(context).delete_volume(namespace, claim)
    except (RuntimeError, FileNotFoundError, TrainerError) as error:  # in use, gone, a cluster
        complain(str(error))
        sys.exit(1)
    except ValueError as error:  # a name no claim can have
        complain(str(error))
        sys.exit(2)
    say(f"persistentVolumeClaim {namespace}/{claim} deleted ({path})")
