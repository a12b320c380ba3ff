"""packages_to_install on the local backend: the environment's packages are used, never shadowed.

The missing package is a pure-Python wheel built here and offered through a local
``--find-links`` directory with pip's index turned off, so nothing reaches the network.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import time
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner
from trainer_sdk import CustomTrainer, InvalidTrainJobError, LocalBackendConfig, TrainerClient
from trainer_sdk.backends.local import packages
from trainer_sdk.backends.local.jobdir import JobDir, read_json
from trainer_sdk.cli import cli
from trainer_sdk.cli.output import size

TORCH = metadata.version("torch")
DEADLINE_SECONDS = 300


def make_wheel(
    directory: Path, name: str = "tinypkg", version: str = "1.0", requires: tuple[str, ...] = ()
) -> Path:
    """A minimal pure-Python wheel, so that pip installs without network or build backend."""
    info = f"{name}-{version}.dist-info"
    depends = "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        f"{name}/__init__.py": "VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{depends}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"{info}/RECORD"
    lines = []
    for path, text in files.items():
        digest = (
            base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        )
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[record] = "\n".join([*lines, f"{record},,"]) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture
def offline_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a local directory with one wheel, ``tinypkg 1.0``."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


class Events:
    """Collects ``(reason, message)`` as the supervisor's event callback would."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, reason: str, message: str) -> None:
        self.seen.append((reason, message))

    def reasons(self) -> list[str]:
        return [reason for reason, _ in self.seen]


@pytest.mark.parametrize(
    "requirements",
    [
        ["torch"],
        ["numpy", "torch"],
        [f"torch=={TORCH}"],
        ["torch>=2", 'torch<1; python_version<"3"'],
    ],
)
def test_requirements_the_environment_satisfies_need_no_install(requirements: list[str]) -> None:
    plan = packages.plan_packages(requirements, sys.executable)
    assert plan.missing == ()
    assert [requirement for requirement, _ in plan.satisfied] == requirements
    assert dict(plan.satisfied)[requirements[-1 if len(requirements) == 2 else 0]] in (
        TORCH,
        "not for this environment",
    )
    assert TORCH in dict(plan.satisfied).values()


def test_a_conflicting_version_is_refused_with_both_versions() -> None:
    with pytest.raises(InvalidTrainJobError) as raised:
        packages.plan_packages(["numpy", "cmaes==0.0.1"], sys.executable)
    (error,) = raised.value.errors
    assert error.field == "packages_to_install[1]"
    assert "'cmaes==0.0.1' conflicts with cmaes " + metadata.version("cmaes") in error.message
    assert "isolated_packages=True" in error.message


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param("-r /etc/hostname", id="requirements-file-option"),
        pytest.param("--index-url=http://127.0.0.1:9/", id="index-option"),
        pytest.param("./local-dir", id="bare-path"),
        pytest.param("numpy; os.system('x')", id="bad-marker"),
    ],
)
@pytest.mark.parametrize("isolated", [False, True])
def test_an_entry_that_is_not_a_pep_508_requirement_is_refused(entry: str, isolated: bool) -> None:
    with pytest.raises(InvalidTrainJobError) as raised:
        packages.plan_packages(["numpy", entry], sys.executable, isolated=isolated)
    (error,) = raised.value.errors
    assert error.field == "packages_to_install[1]"
    assert "expected a PEP 508 requirement" in error.message and "pip options" in error.message


def test_options_never_reach_pip_in_any_backends_command(client: TrainerClient) -> None:
    from trainer_sdk.manifests.trainjobs import command_for_function

    runtime = client.get_runtime("torch-distributed")
    with pytest.raises(ValueError, match=r"packages_to_install\[1\]: expected a PEP 508"):
        command_for_function(runtime, report_imports, None, (), ["torch", "-r /etc/hostname"])
    with pytest.raises(ValueError, match=r"packages_to_install\[0\]: expected a PEP 508"):
        client.train(trainer=CustomTrainer(report_imports, packages_to_install=["-r /etc/x"]))
    assert client.list_jobs() == []
    script = " ".join(command_for_function(runtime, report_imports, None, (), ["tiny-pkg>=1"]))
    assert "--user -- 'tiny-pkg>=1'" in script


def test_isolation_is_an_explicit_opt_in_for_conflicts_only() -> None:
    plan = packages.plan_packages(
        ["numpy", "cmaes==0.0.1", "tinypkg"], sys.executable, isolated=True
    )
    assert plan.isolated and plan.missing == ("cmaes==0.0.1", "tinypkg")
    assert [requirement for requirement, _ in plan.satisfied] == ["numpy"]
    plain = packages.plan_packages(["torch", "tinypkg"], sys.executable, isolated=True)
    assert not plain.isolated and plain.missing == ("tinypkg",)


def test_another_torch_is_refused_even_isolated() -> None:
    with pytest.raises(InvalidTrainJobError) as raised:
        packages.plan_packages(["tinypkg", "torch==2.4.0"], sys.executable, isolated=True)
    (error,) = raised.value.errors
    assert error.field == "packages_to_install[1]"
    assert "torch is always the environment's" in error.message


def test_an_isolated_set_never_holds_torch(tmp_path: Path, offline_wheels: Path) -> None:
    """cmaes 0.0.1 (a conflict) needs torch and tinypkg: pip resolves it against the
    environment, installs cmaes and tinypkg apart and leaves torch to the environment (only
    those two wheels are offered, so an attempt to install torch would fail)."""
    make_wheel(offline_wheels, "cmaes", "0.0.1", requires=("torch", "tinypkg"))
    plan = packages.plan_packages(["cmaes==0.0.1"], sys.executable, isolated=True)
    log, events = tmp_path / "node.log", Events()
    (target,) = packages.install_missing(
        tmp_path / "cache", sys.executable, plan, [], [log], events
    )
    installed = sorted(path.name for path in target.iterdir() if path.name.endswith("dist-info"))
    assert installed == ["cmaes-0.0.1.dist-info", "tinypkg-1.0.dist-info"]
    assert not list(target.glob("torch*"))
    assert "torch stays the environment's" in log.read_text()


def test_a_missing_package_is_installed_once_beside_the_environment(
    tmp_path: Path, offline_wheels: Path
) -> None:
    plan = packages.plan_packages(["tinypkg", "torch"], sys.executable)
    assert plan.missing == ("tinypkg",)
    assert f"torch=={TORCH}" in plan.pins
    log, events = tmp_path / "node.log", Events()
    first = packages.install_missing(tmp_path / "cache", sys.executable, plan, [], [log], events)
    assert [path.name for path in first] == ["site-packages"]
    assert (first[0] / "tinypkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert not list(first[0].glob("torch*")), "torch comes from the environment, not the set"
    assert events.reasons() == ["PackageFromEnvironment", "InstallingPackages", "PackageInstalled"]
    assert events.seen[-1] == ("PackageInstalled", "tinypkg-1.0")
    assert "Successfully installed tinypkg-1.0" in log.read_text()

    again = Events()
    second = packages.install_missing(tmp_path / "cache", sys.executable, plan, [], [log], again)
    assert second == first
    assert again.reasons() == ["PackageFromEnvironment", "PackagesReused"]
    assert log.read_text().count("[trainer-sdk] pip install") == 1


def test_a_failed_install_carries_pips_error(tmp_path: Path, offline_wheels: Path) -> None:
    plan = packages.plan_packages(["no-such-package-anywhere"], sys.executable)
    with pytest.raises(packages.PackageInstallError, match=r"ERROR: .*no-such-package-anywhere"):
        packages.install_missing(tmp_path / "cache", sys.executable, plan, [], [], Events())
    assert packages.cache_entries(tmp_path) == []
    assert not list((tmp_path / "cache").iterdir()), "no staging directory is left behind"


def test_the_cache_has_a_size_and_can_be_pruned(tmp_path: Path, offline_wheels: Path) -> None:
    plan = packages.plan_packages(["tinypkg"], sys.executable)
    cache = tmp_path / packages.CACHE_DIR
    packages.install_missing(cache, sys.executable, plan, [], [], Events())
    (entry,) = packages.cache_entries(tmp_path)
    assert entry.requirements == ("tinypkg",)
    assert entry.size_bytes >= len("VALUE = 42\n")
    assert packages.prune_cache(tmp_path, older_than_seconds=3600) == []
    assert packages.prune_cache(tmp_path) == [entry]
    assert packages.cache_entries(tmp_path) == [] and not entry.path.exists()


def test_trainer_packages_lists_sizes_and_prunes(tmp_path: Path, offline_wheels: Path) -> None:
    plan = packages.plan_packages(["tinypkg"], sys.executable)
    packages.install_missing(tmp_path / packages.CACHE_DIR, sys.executable, plan, [], [], Events())
    (entry,) = packages.cache_entries(tmp_path)
    runner = CliRunner()
    listed = runner.invoke(cli, ["--root", str(tmp_path), "packages", "list"])
    assert listed.exit_code == 0, listed.output
    assert entry.path.name in listed.output and "tinypkg" in listed.output
    assert f"1 set(s), {size(entry.size_bytes)} in" in listed.output
    pruned = runner.invoke(cli, ["--root", str(tmp_path), "packages", "prune"])
    assert pruned.exit_code == 0, pruned.output
    assert pruned.output.startswith("removed 1 set(s)")
    assert packages.cache_entries(tmp_path) == []


# -- through the local backend ------------------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def report_imports() -> None:
    import importlib.util

    import torch

    print(f"torch_file={torch.__file__}")
    found = importlib.util.find_spec("tinypkg")
    if found is not None:
        import tinypkg

        print(f"tinypkg={tinypkg.VALUE} from {tinypkg.__file__}")


def _run(client: TrainerClient, requirements: list[str] | None) -> tuple[str, float]:
    started = time.monotonic()
    name = client.train(trainer=CustomTrainer(report_imports, packages_to_install=requirements))
    client.wait_for_job_status(name, timeout=DEADLINE_SECONDS)
    return name, time.monotonic() - started


@pytest.mark.e2e
def test_a_job_asking_for_torch_runs_the_clients_torch_without_pip(
    client: TrainerClient, tmp_path: Path
) -> None:
    import torch

    name, _ = _run(client, ["torch"])
    log = "\n".join(client.get_job_logs(name))
    assert f"torch_file={torch.__file__}" in log
    assert "pip install" not in log
    assert not (tmp_path / "jobs" / packages.CACHE_DIR).exists(), "pip never ran"
    reasons = [event.reason for event in client.get_job_events(name)]
    assert "PackageFromEnvironment" in reasons and "InstallingPackages" not in reasons


@pytest.mark.e2e
def test_a_missing_package_is_installed_once_and_reused_by_the_next_job(
    client: TrainerClient, tmp_path: Path, offline_wheels: Path
) -> None:
    import torch

    first, _ = _run(client, ["tinypkg", "torch"])
    log = "\n".join(client.get_job_logs(first))
    assert "Successfully installed tinypkg-1.0" in log, "pip's output is in the step log"
    assert "tinypkg=42 from " + str(tmp_path / "jobs" / packages.CACHE_DIR) in log
    assert f"torch_file={torch.__file__}" in log
    second, _ = _run(client, ["tinypkg", "torch"])
    assert "tinypkg=42" in "\n".join(client.get_job_logs(second))
    for name, state in ((first, "Installed"), (second, "Reused")):  # trainer get's install step
        shown = CliRunner().invoke(cli, ["--root", str(tmp_path / "jobs"), "get", name]).output
        assert re.search(rf"install-packages\s+{state}\s+tinypkg", shown), shown
    reasons = [event.reason for event in client.get_job_events(second)]
    assert "PackagesReused" in reasons and "InstallingPackages" not in reasons
    assert len(packages.cache_entries(tmp_path / "jobs")) == 1


@pytest.mark.e2e
def test_a_failed_install_fails_the_job_with_pips_error(
    client: TrainerClient, offline_wheels: Path
) -> None:
    name = client.train(
        trainer=CustomTrainer(report_imports, packages_to_install=["no-such-package-anywhere"])
    )
    with pytest.raises(RuntimeError, match="PackageInstallFailed"):
        client.wait_for_job_status(name, timeout=DEADLINE_SECONDS)
    state = read_json(JobDir(client.backend.root, name).state)  # type: ignore[attr-defined]
    (condition,) = state["trainjob"]["conditions"]
    assert condition["reason"] == "PackageInstallFailed"
    assert "ERROR: " in condition["message"] and "no-such-package-anywhere" in condition["message"]


def test_a_conflict_is_refused_before_the_job_starts(client: TrainerClient, tmp_path: Path) -> None:
    with pytest.raises(InvalidTrainJobError, match=re.escape(f"conflicts with torch {TORCH}")):
        client.train(trainer=CustomTrainer(report_imports, packages_to_install=["torch==2.4.0"]))
    assert client.list_jobs() == []
