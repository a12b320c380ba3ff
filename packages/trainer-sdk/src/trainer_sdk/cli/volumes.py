"""``trainer volumes``: the local persistent volume claims (size, jobs using them), and deleting
one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from trainer_sdk.backends.local import volumes as local_volumes
from trainer_sdk.configs import default_local_root

__all__ = ["volumes"]

_console = Console()
_errors = Console(stderr=True, soft_wrap=True)


def _root(context: click.Context) -> Path:
    """The local backend's root: ``trainer --root``, else the default."""
    root = (context.obj or {}).get("local", {}).get("root")
    return Path(root) if root else default_local_root()


def _human(size: int) -> str:
    """``size`` bytes in binary units."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    value, index = float(size), 0
    while value >= 1024 and index < len(units) - 1:
        value, index = value / 1024, index + 1
    return f"{size} B" if index == 0 else f"{value:.1f} {units[index]}"


@click.group(invoke_without_command=True)
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def volumes(context: click.Context, output: str) -> None:
    """The local persistent volume claims: they outlive jobs, as claims do in a cluster."""
    if context.invoked_subcommand is not None:
        return
    claims = local_volumes.list_claims(_root(context))
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
    table = Table("NAMESPACE", "CLAIM", "SIZE", "JOBS", "PATH")
    for claim in claims:
        jobs = ", ".join(claim.jobs) or "-"
        table.add_row(claim.namespace, claim.name, _human(claim.size_bytes), jobs, str(claim.path))
    _console.print(table)


@volumes.command()
@click.argument("claim")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.pass_context
def delete(context: click.Context, claim: str, namespace: str) -> None:
    """Delete CLAIM's data (refused while a running job mounts it)."""
    try:
        path = local_volumes.delete_claim(namespace, claim, _root(context))
    except (local_volumes.ClaimInUseError, FileNotFoundError) as error:
        _errors.print(f"[red]error:[/red] {error}", highlight=False)
        sys.exit(1)
    except local_volumes.InvalidVolumeError as error:
        _errors.print(f"[red]error:[/red] {error}", highlight=False)
        sys.exit(2)
    _errors.print(f"persistentVolumeClaim {namespace}/{claim} deleted ({path})", highlight=False)
