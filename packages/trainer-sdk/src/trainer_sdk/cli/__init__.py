"""The ``trainer`` command line: one click group, its commands in the modules of this package."""

from trainer_sdk.cli import suspend
from trainer_sdk.cli.app import cli, main, status_line

for _command in suspend.COMMANDS:
    cli.add_command(_command)

__all__ = ["cli", "main", "status_line"]
