"""``trainer-controller``: command line of the controller package.

``render`` prints the objects the controller would create for a TrainJob. Subcommands are
click commands on the ``cli`` group; the operator adds ``run`` the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

import click
import trainer_api
from trainer_api import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from trainer_runtime.admission import admit, deprecation_warnings
from trainer_runtime.builtin import builtin_runtimes
from trainer_runtime.errors import BuildError
from trainer_runtime.rendering import render

from trainer_controller.operator import run

__all__ = ["cli", "find_runtime"]

Runtime: TypeAlias = TrainingRuntime | ClusterTrainingRuntime


@click.group()
@click.version_option(
    package_name="trainer-controller",
    prog_name="trainer-controller",
    message="%(prog)s %(version)s",
)
def cli() -> None:
    """The trainer controller: render TrainJobs into the objects that run them."""


def find_runtime(job: TrainJob, given: Sequence[Runtime]) -> Runtime | None:
    """The runtime ``job`` references: among ``given`` first, then the built-in runtimes."""
    ref = job.spec.runtime_ref
    kind = ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND
    for runtime in given:
        if runtime.kind == kind and runtime.metadata.name == ref.name:
            return runtime
    if kind == trainer_api.CLUSTER_TRAINING_RUNTIME_KIND:
        return builtin_runtimes().get(ref.name)
    return None


@cli.command(name="render")
@click.option(
    "-f",
    "--filename",
    "filenames",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file with TrainJobs and (Cluster)TrainingRuntimes; repeat for more files.",
)
def render_command(filenames: tuple[Path, ...]) -> None:
    """Print, as a YAML stream, the objects the controller would create for each TrainJob.

    Admission warnings (a deprecated runtime) go to stderr.
    """
    objects: list[object] = []
    for path in filenames:
        try:  # read as the API server reads YAML: UTF-8, bounded aliasing and depth
            objects += trainer_api.parse_all(path.read_bytes())
        except OSError as error:
            _fail(f"{path}: cannot read", [str(error.strerror)])
        except trainer_api.ValidationError as error:
            _fail(f"{path}: invalid input", [str(e) for e in error.errors])
    runtimes = [
        obj for obj in objects if isinstance(obj, (TrainingRuntime, ClusterTrainingRuntime))
    ]
    jobs = [obj for obj in objects if isinstance(obj, TrainJob)]
    if not jobs:
        _fail("no TrainJob in the given files", [])
    manifests: list[dict[str, Any]] = []
    for job in jobs:
        runtime = find_runtime(job, runtimes)
        if runtime is None:
            ref = job.spec.runtime_ref
            _fail(
                f"TrainJob {job.metadata.name!r}: runtime not found",
                [
                    f"spec.runtimeRef: no {ref.kind or 'ClusterTrainingRuntime'} "
                    f"named {ref.name!r} "
                    "in the given files or the built-in runtimes"
                ],
            )
        manifests += _render_job(job, runtime)
    click.echo(trainer_api.dump_yaml_stream(manifests), nl=False)


def _render_job(job: TrainJob, runtime: Runtime) -> list[dict[str, Any]]:
    """The job's objects; the admission warnings go to stderr first, as kubectl prints them."""
    for warning in deprecation_warnings(runtime):
        click.echo(f"Warning: TrainJob {job.metadata.name!r}: {warning}", err=True)
    try:
        return render(admit(job, runtime))
    except BuildError as error:
        _fail(f"TrainJob {job.metadata.name!r} cannot be built", str(error).splitlines())


def _fail(headline: str, lines: Sequence[str]) -> NoReturn:
    click.echo(f"error: {headline}", err=True)
    for line in lines:
        click.echo(f"  {line}", err=True)
    sys.exit(1)


cli.add_command(run)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="trainer-controller")
