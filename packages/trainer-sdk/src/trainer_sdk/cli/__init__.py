"""The ``trainer`` command line: one click group, its commands in the modules of this package."""

from trainer_sdk.cli import apply as apply_commands
from trainer_sdk.cli import suspend
from trainer_sdk.cli.app import cli, main, status_line
from trainer_sdk.cli.optimize import optimizationjob, optimize
from trainer_sdk.cli.packages import packages_group
from trainer_sdk.cli.volumes import volumes

cli.add_command(volumes)
cli.add_command(packages_group)
cli.add_command(apply_commands.apply)
cli.add_command(apply_commands.with_runtime_noun(cli.commands["get"], apply_commands.get_runtime))
cli.add_command(
    apply_commands.with_runtime_noun(cli.commands["delete"], apply_commands.delete_runtime)
)
for _command in suspend.COMMANDS:
    cli.add_command(_command)
cli.add_command(optimize)
cli.add_command(optimizationjob)

__all__ = ["cli", "main", "status_line"]
