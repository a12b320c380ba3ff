"""The ``trainer`` command line: one click group, its commands in the modules of this package.

Each module imports only click (and the small ``trainer_sdk`` modules) at import time; the
client, the backends, rich and PyYAML load inside the command that runs (``trainer --help``
answers without them).
"""

from trainer_sdk.cli import apply as apply_commands
from trainer_sdk.cli import optimize, suspend
from trainer_sdk.cli.app import cli, main, status_line
from trainer_sdk.cli.nouns import with_nouns
from trainer_sdk.cli.packages import packages_group
from trainer_sdk.cli.volumes import volumes

cli.add_command(volumes)
cli.add_command(packages_group)
cli.add_command(apply_commands.apply)
_OPTIMIZATION_JOBS = ("optimizationjob", "optimizationjobs")
cli.add_command(
    with_nouns(
        cli.commands["get"],
        {"runtime": apply_commands.get_runtime}
        | dict.fromkeys(_OPTIMIZATION_JOBS, optimize.get_command),
    )
)
cli.add_command(
    with_nouns(
        cli.commands["delete"],
        {"runtime": apply_commands.delete_runtime}
        | dict.fromkeys(_OPTIMIZATION_JOBS, optimize.delete_command),
    )
)
cli.add_command(
    with_nouns(cli.commands["list"], dict.fromkeys(_OPTIMIZATION_JOBS, optimize.list_command))
)
for _command in suspend.COMMANDS:
    cli.add_command(_command)
cli.add_command(optimize.optimize)
cli.add_command(optimize.optimizationjob)

__all__ = ["cli", "main", "status_line"]
