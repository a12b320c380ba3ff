"""Generated tables in a README: the lines between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` are replaced by a script's output, everything else is left alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["replace_section"]


def replace_section(readme: Path, name: str, lines: Sequence[str]) -> None:
    """Write ``lines`` between the two markers of section ``name`` in ``readme``; raises
    ``ValueError`` naming the file and the marker when the section is missing."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = readme.read_text()
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{readme}: expected one {start} ... {end} section")
    before, rest = text.split(start)
    _, after = rest.split(end)
    readme.write_text("".join([before, start, "\n", *(f"{line}\n" for line in lines), end, after]))
