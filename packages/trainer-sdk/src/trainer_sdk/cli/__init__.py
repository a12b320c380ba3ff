"""The ``trainer`` command line: one click group, its commands in the modules of this package."""

from trainer_sdk.cli.app import cli, main, status_line
from trainer_sdk.cli.packages import packages_group

cli.add_command(packages_group)

__all__ = ["cli", "main", "status_line"]
