"""The workspace's own rules: README commands, CI entry point and hatch environments agree."""

from __future__ import annotations

import configparser
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
HATCH: dict[str, Any] = tomllib.loads((ROOT / "hatch.toml").read_text())
ENVS: dict[str, dict[str, Any]] = HATCH["envs"]


def readme_commands() -> list[str]:
    """The lines of the README's first bash block."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block is not None, "README.md has no ```bash block"
    return block[1].splitlines()


def test_readme_opens_with_the_main_job_and_the_test_suite() -> None:
    assert readme_commands() == [
        "tools/bootstrap && hatch run main",
        "tools/bootstrap && hatch run test",
    ]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [
        line for line in lines if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert commands == [readme_commands()[1]]


@pytest.mark.parametrize("name", sorted(ENVS))
def test_environment_stays_on_pip_and_pins_torch(name: str) -> None:
    env = ENVS[name]
    assert env.get("installer", "pip") == "pip"
    requirements = [*env.get("dependencies", []), *env.get("extra-dependencies", [])]
    torch = [line for line in requirements if re.match(r"torch\b(?!-|_)", line)]
    assert torch in ([], ["torch==2.13.0"])


def test_default_environment_installs_every_package_and_sets_the_runtime_variables() -> None:
    default = ENVS["default"]
    assert default["workspace"]["members"] == ["packages/*"]
    assert "torch==2.13.0" in default["dependencies"]
    required = {
        "TRITON_INTERPRET": "1",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    assert required.items() <= default["env-vars"].items()


def test_the_test_command_lints_and_strictly_type_checks_every_package() -> None:
    scripts = ENVS["default"]["scripts"]
    assert scripts["test"][0] == "mpi-wheels" and scripts["test"][-1] == "pytest {args}"
    assert "checks" in scripts["test"]
    assert "ruff check ." in scripts["checks"]
    assert "mypy" in scripts["checks"]
    mypy = configparser.ConfigParser()
    mypy.read(ROOT / "mypy.ini")
    assert mypy.getboolean("mypy", "strict")
    assert mypy.getboolean("mypy", "warn_unused_ignores")
    checked = sorted(ROOT.glob(mypy.get("mypy", "files")))
    assert checked == sorted(ROOT.glob("packages/*/src"))
    assert len(checked) == len(list(ROOT.glob("packages/*/pyproject.toml")))


@pytest.mark.parametrize("package", sorted(ROOT.glob("packages/*/src/*/__init__.py")), ids=str)
def test_every_package_ships_py_typed(package: Path) -> None:
    assert (package.parent / "py.typed").is_file()


def test_test_package_passes_pytest_options_after_the_package_name() -> None:
    """``pytest packages/{args}/tests`` put ``-m "not e2e"`` inside the path."""
    import subprocess
    import sys

    assert ENVS["default"]["scripts"]["test-package"] == "python tools/test_package.py {args}"
    script = [sys.executable, str(ROOT / "tools" / "test_package.py")]
    collected = subprocess.run(
        [*script, "mpi-runtime", "-m", "not e2e", "--collect-only", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "packages/mpi-runtime/tests/" in collected.stdout
    unknown = subprocess.run([*script, "no-such"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "NAME: one of" in unknown.stderr
