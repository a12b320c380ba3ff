"""``trainer suspend NAME`` / ``trainer resume NAME``: set a TrainJob's ``spec.suspend``.

Suspending ends the job's pods with SIGTERM; training code that uses ``trainer_sdk.checkpoint``
saves at the next step boundary and exits, and resuming starts the pods again from that
checkpoint (the same path Kueue's suspension takes)."""

from __future__ import annotations

import click

from trainer_sdk.cli.clients import trainer_client
from trainer_sdk.cli.output import fail, say
from trainer_sdk.errors import TrainerError

__all__ = ["COMMANDS", "resume", "suspend"]


def _set_suspended(context: click.Context, name: str, suspended: bool) -> None:
    client = trainer_client(context)
    try:
        if suspended:
            client.suspend_job(name)
        else:
            client.resume_job(name)
    except TrainerError as error:
        fail(str(error), 1)
    say(f"TrainJob {name} {'suspended' if suspended else 'resumed'}")


@click.command()
@click.argument("name")
@click.pass_context
def suspend(context: click.Context, name: str) -> None:
    """Suspend NAME: its pods stop (SIGTERM: checkpointing code saves first)."""
    _set_suspended(context, name, True)


@click.command()
@click.argument("name")
@click.pass_context
def resume(context: click.Context, name: str) -> None:
    """Resume the suspended NAME from its latest checkpoint."""
    _set_suspended(context, name, False)


COMMANDS = (suspend, resume)
