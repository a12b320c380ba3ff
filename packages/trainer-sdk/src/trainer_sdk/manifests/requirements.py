"""What ``packages_to_install`` may hold: PEP 508 requirement specifiers, never pip options.

Each entry is handed to pip as one argument, after ``--``; one that is not a requirement (``-r
/etc/hostname``, ``--index-url ...``, a bare path) is refused before any job is built, on every
backend, naming its index.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement

__all__ = ["requirement_problem", "requirement_problems"]


def requirement_problem(text: object) -> str | None:
    """Why ``text`` is not a PEP 508 requirement, or None when it is one."""
    if not isinstance(text, str):
        return f"expected a requirement string, got {type(text).__name__}"
    try:
        Requirement(text)
    except InvalidRequirement as error:
        return (
            "expected a PEP 508 requirement (a name with optional extras, version specifiers and "
            f"marker, or 'name @ URL'; pip options are not accepted), got {text!r}: {error}"
        )
    return None


def requirement_problems(packages: Sequence[object]) -> list[tuple[int, str]]:
    """(index, problem) of each entry of ``packages`` that is not a PEP 508 requirement."""
    return [
        (index, problem)
        for index, text in enumerate(packages)
        if (problem := requirement_problem(text)) is not None
    ]
