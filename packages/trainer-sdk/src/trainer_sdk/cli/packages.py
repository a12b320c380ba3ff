"""``trainer packages``: the local backend's cache of installed ``packages_to_install`` sets."""

from __future__ import annotations

import time
from pathlib import Path

import click

from trainer_sdk.backends.local import packages
from trainer_sdk.configs import LocalBackendConfig

__all__ = ["packages_group"]

_SECONDS_PER_DAY = 86400.0
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _root(context: click.Context) -> Path:
    """The local backend's root as ``trainer --root`` (or its default) names it."""
    options = (context.obj or {}).get("local") or {}
    return Path(options.get("root") or LocalBackendConfig().root)


def _size(size_bytes: int) -> str:
    value, unit = float(size_bytes), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {_UNITS[unit]}"


@click.group(name="packages")
def packages_group() -> None:
    """Requirement sets installed for local jobs (what the environment lacked)."""


@packages_group.command(name="list")
@click.pass_context
def list_sets(context: click.Context) -> None:
    """Each installed set, its size and when a job last used it; then the total."""
    entries = packages.cache_entries(_root(context))
    for entry in entries:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
        click.echo(
            f"{entry.path.name}  {_size(entry.size_bytes):>10}  {used}  "
            + " ".join(entry.requirements)
        )
    total = sum(entry.size_bytes for entry in entries)
    click.echo(f"{len(entries)} set(s), {_size(total)} in {_root(context) / packages.CACHE_DIR}")


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
    removed = packages.prune_cache(_root(context), days * _SECONDS_PER_DAY)
    freed = sum(entry.size_bytes for entry in removed)
    click.echo(f"removed {len(removed)} set(s), {_size(freed)}")
