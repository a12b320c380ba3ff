"""``trainer packages``: the local backend's cache of installed ``packages_to_install`` sets."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from trainer_sdk.cli.clients import trainer_client
from trainer_sdk.cli.output import complain, size

if TYPE_CHECKING:
    from trainer_sdk.client import PackageSet, TrainerClient

__all__ = ["packages_group"]

_SECONDS_PER_DAY = 86400.0


def _package_sets(
    context: click.Context, call: Callable[[TrainerClient], list[PackageSet]]
) -> list[PackageSet]:
    """``call`` on the client of ``--backend``; exit 1 with the reason where it keeps none."""
    from trainer_sdk.errors import TrainerError

    try:
        return call(trainer_client(context))
    except TrainerError as error:  # a cluster: its images carry their packages
        complain(str(error))
        sys.exit(1)


@click.group(name="packages")
def packages_group() -> None:
    """Requirement sets installed for local jobs (what the environment lacked)."""


@packages_group.command(name="list")
@click.pass_context
def list_sets(context: click.Context) -> None:
    """Each installed set, its size and when a job last used it; then the total."""
    entries = _package_sets(context, lambda client: client.list_package_sets())
    for entry in entries:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
        click.echo(
            f"{entry.path.name}  {size(entry.size_bytes):>10}  {used}  "
            + " ".join(entry.requirements)
        )
    total = sum(entry.size_bytes for entry in entries)
    where = f" in {entries[0].path.parent}" if entries else ""  # the backend's cache
    click.echo(f"{len(entries)} set(s), {size(total)}{where}")


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
    removed = _package_sets(
        context, lambda client: client.prune_package_sets(days * _SECONDS_PER_DAY)
    )
    freed = sum(entry.size_bytes for entry in removed)
    click.echo(f"removed {len(removed)} set(s), {size(freed)}")
