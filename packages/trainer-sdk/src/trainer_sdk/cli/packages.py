"""``trainer packages``: the local backend's cache of installed ``packages_to_install`` sets."""

from __future__ import annotations

import time

import click

from trainer_sdk.cli.clients import local_root
from trainer_sdk.cli.output import size

__all__ = ["packages_group"]

_SECONDS_PER_DAY = 86400.0


@click.group(name="packages")
def packages_group() -> None:
    """Requirement sets installed for local jobs (what the environment lacked)."""


@packages_group.command(name="list")
@click.pass_context
def list_sets(context: click.Context) -> None:
    """Each installed set, its size and when a job last used it; then the total."""
    from trainer_sdk import local_storage as packages

    entries = packages.cache_entries(local_root(context))
    for entry in entries:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
        click.echo(
            f"{entry.path.name}  {size(entry.size_bytes):>10}  {used}  "
            + " ".join(entry.requirements)
        )
    total = sum(entry.size_bytes for entry in entries)
    click.echo(
        f"{len(entries)} set(s), {size(total)} in {local_root(context) / packages.CACHE_DIR}"
    )


@packages_group.command()
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Remove only sets no job used for this many days.",
)
@click.pass_context
def prune(context: click.Context, days: float) -> None:
    """Remove installed sets; a later job that needs one installs it again."""
    from trainer_sdk import local_storage as packages

    removed = packages.prune_cache(local_root(context), days * _SECONDS_PER_DAY)
    freed = sum(entry.size_bytes for entry in removed)
    click.echo(f"removed {len(removed)} set(s), {size(freed)}")
