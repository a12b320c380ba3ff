"""The ``trainer`` command line: one click group, its commands in the modules of this package."""

from trainer_sdk.cli.app import cli, main, status_line
from trainer_sdk.cli.volumes import volumes

cli.add_command(volumes)

__all__ = ["cli", "main", "status_line"]
