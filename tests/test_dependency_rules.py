"""The dependency rules between packages, read from every packages/*/pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import release

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = release.read_projects(ROOT)
VERSION = release.read_version(ROOT)
# What only the operator (and the SDK's Kubernetes backend, behind an extra) needs.
OPERATOR_STACK = {"aiohttp", "prometheus-client", "kubernetes"}
OPERATOR_MODULES = ["aiohttp", "prometheus_client", "kubernetes"]
# What only the search (trainer-search) needs.
SEARCH_ENGINE = {"optuna", "cmaes", "scipy"}


def requirement_names(name: str) -> set[str]:
    """Canonical names of everything the package `name` requires directly."""
    return {canonicalize_name(requirement.name) for requirement in PROJECTS[name].requirements}


def install_requirement_names(name: str) -> set[str]:
    """Canonical names of what `pip install name` pulls in directly (no extras)."""
    pyproject = tomllib.loads((PROJECTS[name].directory / "pyproject.toml").read_text())
    return {
        canonicalize_name(Requirement(line).name) for line in pyproject["project"]["dependencies"]
    }


def test_the_packages_are_there() -> None:
    # The seven libraries, and data-cache's dependency-free objects for the controller.
    assert sorted(PROJECTS) == [
        "data-cache-manifests",
        "gems-kernels",
        "mpi-runtime",
        "trainer-api",
        "trainer-controller",
        "trainer-data-cache",
        "trainer-runtime",
        "trainer-sdk",
        "trainer-search",
    ]


def test_trainer_api_depends_only_on_pydantic_and_pyyaml() -> None:
    assert requirement_names("trainer-api") == {"pydantic", "pyyaml"}


def test_gems_kernels_declares_no_trainer_package() -> None:
    closure = release.dependency_closure(PROJECTS, ["gems-kernels"])
    assert closure == ["gems-kernels"]
    assert not {name for name in requirement_names("gems-kernels") if name.startswith("trainer-")}


def test_trainer_sdk_closure_does_not_pull_in_triton() -> None:
    # Only trainer-sdk[torch] brings gems-kernels (and so triton): TRAINER_GEMS=1 (issue 27).
    closure = release.dependency_closure(PROJECTS, ["trainer-sdk"])
    pulled = {name: install_requirement_names(name) for name in closure}
    assert "gems-kernels" not in pulled["trainer-sdk"]
    assert {name: needs for name, needs in pulled.items() if "triton" in needs} == {
        "gems-kernels": install_requirement_names("gems-kernels")
    }
    pyproject = tomllib.loads((PROJECTS["trainer-sdk"].directory / "pyproject.toml").read_text())
    torch_extra = [
        Requirement(line) for line in pyproject["project"]["optional-dependencies"]["torch"]
    ]
    assert f"gems-kernels=={VERSION}" in {str(requirement) for requirement in torch_extra}


def test_trainer_controller_closure_does_not_pull_in_torch() -> None:
    closure = release.dependency_closure(PROJECTS, ["trainer-controller"])
    assert "trainer-data-cache" not in closure
    pulled = {name: requirement_names(name) for name in closure}
    assert {name: needs for name, needs in pulled.items() if "torch" in needs} == {}


def test_trainer_sdk_closure_leaves_the_operator_stack_out() -> None:
    closure = release.dependency_closure(PROJECTS, ["trainer-sdk"])
    assert "trainer-controller" not in closure
    pulled = set().union(*(install_requirement_names(name) for name in closure))
    assert pulled.isdisjoint(OPERATOR_STACK)


def test_trainer_runtime_closure_leaves_the_search_engine_out() -> None:
    # The pure runtime framework installs without Optuna: only trainer-search brings it.
    closure = release.dependency_closure(PROJECTS, ["trainer-runtime"])
    assert "trainer-search" not in closure
    pulled = set().union(*(install_requirement_names(name) for name in closure))
    assert pulled.isdisjoint(SEARCH_ENGINE)


def test_trainer_search_depends_on_trainer_api_and_the_search_engine_only() -> None:
    assert install_requirement_names("trainer-search") == {"trainer-api", *SEARCH_ENGINE}


def test_parameter_importance_is_declared_by_the_sdk_not_the_controller() -> None:
    # fANOVA needs scikit-learn: the extra that declares it, which the SDK (CLI and UI show
    # importance) installs and the controller (which never computes importance) does not.
    pyproject = tomllib.loads((PROJECTS["trainer-search"].directory / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["importance"]
    assert {canonicalize_name(Requirement(line).name) for line in extra} == {"scikit-learn"}
    wanted = {
        str(requirement)
        for name in ("trainer-sdk", "trainer-controller")
        for requirement in PROJECTS[name].requirements
        if canonicalize_name(requirement.name) == "trainer-search"
    }
    assert wanted == {f"trainer-search[importance]=={VERSION}", f"trainer-search=={VERSION}"}
    sdk = tomllib.loads((PROJECTS["trainer-sdk"].directory / "pyproject.toml").read_text())
    assert f"trainer-search[importance]=={VERSION}" in sdk["project"]["dependencies"]


def test_data_cache_manifests_has_no_dependencies() -> None:
    assert requirement_names("data-cache-manifests") == set()


def test_every_package_takes_VERSION_and_pins_its_siblings_to_it() -> None:
    assert release.project_problems(PROJECTS, VERSION) == []


def import_with_blocked(module: str, blocked: list[str]) -> subprocess.CompletedProcess[str]:
    """Import `module` in a fresh interpreter where importing any of `blocked` fails."""
    code = textwrap.dedent(
        f"""
        import importlib.abc, sys
        BLOCKED = {blocked!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"{{name}} is blocked by the dependency rule test")
        sys.meta_path.insert(0, Block())
        import {module}
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize(
    ("module", "blocked"),
    [
        pytest.param(
            "gems_kernels",
            [
                "trainer_api",
                "trainer_runtime",
                "trainer_controller",
                "trainer_sdk",
                "trainer_data_cache",
                "mpi_runtime",
            ],
            id="gems-kernels-without-other-packages",
        ),
        pytest.param("trainer_sdk", ["triton", "gems_kernels"], id="trainer-sdk-without-triton"),
        pytest.param(
            "trainer_sdk",
            ["trainer_controller", *OPERATOR_MODULES],
            id="trainer-sdk-without-the-operator-stack",
        ),
        pytest.param(
            "trainer_runtime",
            [
                "torch",
                "triton",
                "trainer_controller",
                "trainer_sdk",
                "trainer_search",
                *OPERATOR_MODULES,
                *SEARCH_ENGINE,
            ],
            id="trainer-runtime-without-torch-the-operator-stack-or-the-search-engine",
        ),
        pytest.param(
            "trainer_search",
            ["torch", "triton", "trainer_runtime", "trainer_controller", "trainer_sdk"],
            id="trainer-search-without-torch-or-the-runtime",
        ),
        pytest.param(
            "trainer_controller",
            ["torch", "triton", "trainer_data_cache", "gems_kernels"],
            id="trainer-controller-without-torch",
        ),
        pytest.param(
            "trainer_api",
            [name.replace("-", "_") for name in PROJECTS if name != "trainer-api"],
            id="trainer-api-without-other-packages",
        ),
    ],
)
def test_package_imports_without(module: str, blocked: list[str]) -> None:
    result = import_with_blocked(module, blocked)
    assert result.returncode == 0, result.stderr


def test_a_blocked_import_fails() -> None:
    result = import_with_blocked("trainer_sdk", ["trainer_sdk"])
    assert result.returncode == 1
    assert "trainer_sdk is blocked by the dependency rule test" in result.stderr
