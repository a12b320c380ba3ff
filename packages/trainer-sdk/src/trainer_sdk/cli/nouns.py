"""kubectl's ``VERB KIND NAME`` form on top of the job commands: ``trainer get runtime NAME``,
``trainer list optimizationjobs``, ``trainer delete optimizationjob NAME``."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["with_nouns"]


def with_nouns(jobs: click.Command, nouns: dict[str, click.Command]) -> click.Command:
    """``jobs`` (``trainer get NAME``) that also takes kubectl's ``trainer get KIND NAME``: when
    the first argument is a key of ``nouns`` (``runtime``, ``optimizationjob``), the rest goes to
    that command."""

    class _Command(click.Command):
        def make_context(
            self,
            info_name: str | None,
            args: list[str],
            parent: click.Context | None = None,
            **extra: Any,
        ) -> click.Context:
            if args[:1] and args[0] in nouns:
                noun = nouns[args[0]]
                return noun.make_context(f"{info_name} {args[0]}", args[1:], parent, **extra)
            return super().make_context(info_name, args, parent, **extra)

    forms = "\n\n".join(
        f"'{jobs.name} {noun} ...': {command.help}" for noun, command in _first_forms(nouns)
    )
    return _Command(
        jobs.name,
        callback=jobs.callback,
        params=jobs.params,
        help=f"{jobs.help}\n\n{forms}",
        short_help=jobs.short_help,
    )


def _first_forms(nouns: dict[str, click.Command]) -> list[tuple[str, click.Command]]:
    """Each command once, under the first noun that names it (``optimizationjob``, not also
    its plural)."""
    seen: list[click.Command] = []
    forms = []
    for noun, command in nouns.items():
        if command not in seen:
            seen.append(command)
            forms.append((noun, command))
    return forms
