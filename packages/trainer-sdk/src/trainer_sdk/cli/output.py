"""What every ``trainer`` command prints with: kubectl-style tables, ``-o json|yaml``, errors.

rich and PyYAML are imported on first use, so that ``trainer --help`` loads neither.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Column, Table

__all__ = [
    "NAME_WRAP_WIDTH",
    "OUTPUTS",
    "age",
    "column",
    "complain",
    "emit",
    "fail",
    "plain",
    "say",
    "size",
    "stderr",
    "stdout",
    "table",
]

OUTPUTS = click.Choice(["table", "json", "yaml"])
NAME_WRAP_WIDTH = 24  # a name column may wrap down to this width before columns are dropped


@functools.cache
def stdout() -> Console:
    """The console tables go to."""
    from rich.console import Console

    return Console()


@functools.cache
def stderr() -> Console:
    """The console messages, progress and errors go to."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


def say(markup: str) -> None:
    """One line of rich markup on stderr (values in it escaped by the caller)."""
    stderr().print(markup, highlight=False)


def complain(message: str) -> None:
    """``error: message`` on stderr."""
    from rich.markup import escape

    say(f"[red]error:[/red] {escape(message)}")


def fail(message: str, code: int = 2) -> NoReturn:
    """``error: message`` on stderr and exit ``code`` (2: bad input, 1: the job or object)."""
    complain(message)
    sys.exit(code)


def plain(value: Any) -> Any:
    """Dataclasses, enums and datetimes as JSON-ready values; a non-finite float (a diverged
    objective) as its name (``"nan"``, ``"inf"``), so that the output is strict JSON; a TrainJob's
    runtime by name (its command is a template with ``{func_code}`` holes, not this job's)."""
    from trainer_sdk import types

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = {
            field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
        if isinstance(value, types.RuntimeTrainer):
            shown["command"] = list(value.command)
        if isinstance(value, types.TrainJob):
            shown["runtime"] = value.runtime.name
        return {key: item for key, item in shown.items() if not key.startswith("_")}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value


def emit(value: Any, output: str, render: Callable[[], Table]) -> None:
    """``value`` as ``-o json`` / ``-o yaml`` asks, else the table ``render`` draws."""
    if output == "json":
        click.echo(json.dumps(plain(value), indent=2, allow_nan=False))
    elif output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(plain(value), sort_keys=False))
    else:
        stdout().print(render())


def column(header: str, *, name: bool = False) -> Column:
    """A column that wraps instead of cutting: names (``name``) may fold anywhere, other values
    only between words."""
    from rich.table import Column

    return Column(header, overflow="fold" if name else "ellipsis", no_wrap=not name)


def _needed_width(column: Column, cells: list[str]) -> int:
    """The characters a column takes: its widest cell (a name column wraps at
    ``NAME_WRAP_WIDTH``), its padding and its border."""
    widest = max([len(str(column.header)), *map(len, cells)])
    return (min(widest, NAME_WRAP_WIDTH) if column.overflow == "fold" else widest) + 3


def table(columns: list[Column], rows: list[list[str]], **options: Any) -> Table:
    """A table of ``rows``; within the console's width (80 when not a terminal), columns are
    dropped from the right (never a name column) until it fits, and names wrap; boxed on a
    terminal, plain columns elsewhere."""
    from rich.table import Table

    console = stdout()
    keep = list(range(len(columns)))
    while True:
        needed = 1 + sum(_needed_width(columns[i], [row[i] for row in rows]) for i in keep)
        droppable = [i for i in keep if columns[i].overflow != "fold"]
        if needed <= console.width or len(droppable) <= 1:
            break
        keep.remove(droppable[-1])
    if not console.is_terminal:  # a pipe or a file: kubectl's plain columns, no box
        options = {**options, "box": None, "show_edge": False, "pad_edge": False}
    drawn = Table(*(columns[i] for i in keep), **options)
    for row in rows:
        drawn.add_row(*(row[i] for i in keep))
    return drawn


def age(created: datetime, now: datetime) -> str:
    """kubectl's AGE: 45s, 12m, 3h5m, 2d4h."""
    seconds = max(0, int((now - created).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600}h"


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(size_bytes: int) -> str:
    """``size_bytes`` in binary units: 512 B, 1.5 KiB, 2.0 GiB."""
    value, unit = float(size_bytes), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{size_bytes} B" if unit == 0 else f"{value:.1f} {_UNITS[unit]}"
