"""Install progress of ``packages_to_install`` in ``trainer list`` / ``trainer get`` (issue 30),
and whether a job runs on gems kernels (issue 27) in ``trainer get``."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console
from trainer_sdk import types
from trainer_sdk.cli import app
from trainer_sdk.cli import output as cli_output
from trainer_sdk.status.jobs import to_train_job
from trainer_sdk.status.packages import PackageStatus, package_status
from trainer_sdk.status.runtimes import runtime_from_manifest

START = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
# pip's own lines, as the local backend streams them into the step log
PIP_LOG = [
    "[trainer-sdk] pip install tiny_pkg other-pkg==2.0 third",
    "Looking in links: /wheels",
    "Collecting tiny-pkg",
    "  Using cached tiny_pkg-1.0-py3-none-any.whl",
    "Collecting other-pkg==2.0",
    "Collecting a-dependency (from other-pkg==2.0)",
]


def events(*reasons: tuple[str, str]) -> list[types.Event]:
    return [
        types.Event("TrainJob", "job", message, reason, START + timedelta(seconds=index))
        for index, (reason, message) in enumerate(reasons)
    ]


FROM_ENVIRONMENT = ("PackageFromEnvironment", "torch: 2.13.0, not installed again")
STARTED = ("InstallingPackages", "installing tiny_pkg other-pkg==2.0 third into /cache/0123abcd")
INSTALLING = events(FROM_ENVIRONMENT, STARTED)


def test_while_pip_runs_the_requested_packages_it_collected_are_counted() -> None:
    status = package_status(INSTALLING, PIP_LOG)
    assert status == PackageStatus("Installing", ("tiny_pkg", "other-pkg==2.0", "third"), 2)
    assert str(status) == "Installing packages (2/3)"  # the dependency is not one of the three


@pytest.mark.parametrize(
    ("reasons", "failed", "expected"),
    [
        pytest.param([], False, None, id="no-packages"),
        pytest.param(INSTALLING[:1], False, "FromEnvironment", id="all-in-the-environment"),
        pytest.param(
            events(FROM_ENVIRONMENT, STARTED, ("PackageInstalled", "tiny_pkg-1.0")),
            False,
            "Installed",
            id="installed",
        ),
        pytest.param(
            events(("PackagesReused", "tiny_pkg: installed in /cache/0123abcd")),
            False,
            "Reused",
            id="reused",
        ),
        pytest.param(INSTALLING, True, "Failed", id="pip-failed"),
    ],
)
def test_the_install_state_follows_the_events(
    reasons: list[types.Event], failed: bool, expected: str | None
) -> None:
    status = package_status(reasons, PIP_LOG, failed=failed)
    assert (None if status is None else str(status)) == expected
    if status is not None and status.state == "Reused":
        assert status.requested == ("tiny_pkg",)


def trainjob(env: list[dict[str, str]]) -> types.TrainJob:
    from trainer_sdk.backends.local.submit.planning import builtin_runtime_manifests

    runtime = runtime_from_manifest(builtin_runtime_manifests()["torch-distributed"])
    manifest = {
        "metadata": {"name": "job", "creationTimestamp": START.isoformat()},
        "spec": {"trainer": {"env": env}},
    }
    return to_train_job(manifest, runtime, [])


@pytest.mark.parametrize(
    ("env", "gems"),
    [
        ([], False),
        ([{"name": "TRAINER_GEMS", "value": "1"}], True),
        ([{"name": "TRAINER_GEMS", "value": "true"}], True),
        ([{"name": "TRAINER_GEMS", "value": "1"}, {"name": "TRAINER_GEMS", "value": "0"}], False),
    ],
)
def test_a_job_knows_whether_it_runs_on_gems_kernels(env: list[dict[str, str]], gems: bool) -> None:
    assert trainjob(env).gems_kernels is gems


def test_trainer_get_shows_the_install_step_and_gems(monkeypatch: pytest.MonkeyPatch) -> None:
    written = io.StringIO()
    console = Console(file=written, width=120, color_system=None)
    monkeypatch.setattr(cli_output, "stdout", lambda: console)
    job = trainjob([{"name": "TRAINER_GEMS", "value": "1"}])
    console.print(app._job_table(job, package_status(INSTALLING, PIP_LOG)))
    shown = written.getvalue()
    assert "install-packages" in shown and "Installing packages (2/3)" in shown
    assert "tiny_pkg other-pkg==2.0 third" in shown
    assert "gems kernels: on (TRAINER_GEMS=1)" in shown
