"""The environment a local job's processes inherit, and the names the compiler sees of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk import constants
from trainer_sdk.backends.local.supervisor.job_env import PackagePaths, job_env, job_env_names
from trainer_sdk.backends.local.supervisor.processes import JOB_TOKEN_ENV
from trainer_sdk.training.progress import STATUS_FILE_ENV

INHERITED = {"PATH": "/usr/bin", "PYTHONPATH": "/mine", "HOME": "/home/u"}


def test_the_job_adds_its_shims_progress_file_and_token() -> None:
    env = job_env(INHERITED, shims=Path("/j/bin"), progress=Path("/j/p.json"), token="t")
    assert env == {
        **INHERITED,
        "PATH": "/j/bin:/usr/bin",
        "PYTHONUNBUFFERED": "1",
        STATUS_FILE_ENV: "/j/p.json",
        JOB_TOKEN_ENV: "t",
    }


@pytest.mark.parametrize(
    ("paths", "python_path"),
    [
        pytest.param(([], [Path("/pkg")]), "/mine:/pkg", id="installed-after-the-environment"),
        pytest.param(([Path("/pkg")], []), "/pkg:/mine", id="isolated-first"),
    ],
)
def test_installed_packages_go_on_the_python_path(paths: PackagePaths, python_path: str) -> None:
    env = job_env(
        INHERITED, shims=Path("/j/bin"), progress=Path("/p"), token="t", package_paths=paths
    )
    assert (env["PYTHONPATH"], env[constants.PACKAGES_READY_ENV]) == (python_path, "1")


@pytest.mark.parametrize("packages", [True, False])
def test_the_names_known_at_submit_are_those_the_job_gets(packages: bool) -> None:
    paths: PackagePaths | None = ([Path("/pkg")], []) if packages else None
    env = job_env(
        {"HOME": "/h"}, shims=Path("/b"), progress=Path("/p"), token="t", package_paths=paths
    )
    assert job_env_names(["HOME"], packages) == set(env)
    assert (constants.PACKAGES_READY_ENV in env) is packages
