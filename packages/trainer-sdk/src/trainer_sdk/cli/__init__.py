"""The ``trainer`` command line: one click group, its commands in the modules of this package."""

from trainer_sdk.cli.app import cli, main, status_line
from trainer_sdk.cli.optimize import optimizationjob, optimize

cli.add_command(optimize)
cli.add_command(optimizationjob)

__all__ = ["cli", "main", "status_line"]
