"""The backend is the only door to a job's data (issue 34): read from the sources of every
package, imports anywhere in a module (inside functions and ``TYPE_CHECKING`` blocks too, where
a cycle or a reach into a backend hides until an import order or a refactoring breaks it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[2]
SDK = PACKAGES / "trainer-sdk" / "src"
LOCAL = "trainer_sdk.backends.local"


def in_local(module: str) -> bool:
    return module == LOCAL or module.startswith(f"{LOCAL}.")


def sources() -> Iterator[tuple[str, Path]]:
    """Every module of every package's ``src``: its dotted name and its file."""
    for path in sorted(PACKAGES.glob("*/src/**/*.py")):
        source_root = next(parent for parent in path.parents if parent.name == "src")
        parts = path.relative_to(source_root).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(module: str, path: Path) -> set[str]:
    """The modules ``module`` imports anywhere (relative imports resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sdk_graph() -> dict[str, set[str]]:
    """trainer_sdk's modules and the trainer_sdk modules each imports."""
    modules = {name: path for name, path in sources() if name.startswith("trainer_sdk")}
    return {
        name: {other for other in imported(name, path) if other in modules and other != name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per cycle found (depth-first)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for following in sorted(graph[node]):
            if state.get(following) == 1:
                found.append([*path[path.index(following) :], following])
            elif following not in state:
                visit(following)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def package_import_parents(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the edges from a module to the packages above it (``import a.b.c``
    runs ``a/__init__`` and ``a/b/__init__`` first: not a dependency of the code)."""
    return {
        name: {other for other in found if not name.startswith(f"{other}.")}
        for name, found in graph.items()
    }


def test_trainer_sdk_has_no_import_cycle() -> None:
    """``backends/local/backend.py`` and ``suspension.py`` imported each other: suspension
    reached into the backend's private members."""
    assert cycles(package_import_parents(sdk_graph())) == []


def test_no_module_outside_the_local_backend_imports_it() -> None:
    """The UI, the CLI, the optimizer, ``local_storage`` and the Kubernetes backend imported the
    local backend's modules (its files' layout, ``LocalBackend`` itself, ``step_name``)."""
    reaching = {
        name: sorted(other for other in imported(name, path) if in_local(other))
        for name, path in sources()
        if not in_local(name)
    }
    assert {name: found for name, found in reaching.items() if found} == {
        # TrainerClient makes the backend its configuration names: the one door to it.
        "trainer_sdk.client": [f"{LOCAL}.backend", f"{LOCAL}.backend.LocalBackend"],
        # upstream's import path of the local backend, kept for code written against it
        "trainer_sdk.backends.localprocess.backend": [
            f"{LOCAL}.backend",
            f"{LOCAL}.backend.LocalBackend",
        ],
        # the torchtune engine's local ``tune``: in-pod code of local jobs, which starts a
        # node's ranks through the local torchrun (to move under backends/local/pod/)
        "trainer_sdk.training.engines.torchtune.local_tune": [
            f"{LOCAL}.pod",
            f"{LOCAL}.pod.torchrun_shim",
        ],
    }


def test_nothing_outside_the_local_backend_asks_whether_a_backend_is_local() -> None:
    """The UI and the optimizer branched on ``isinstance(backend, LocalBackend)``."""
    found = []
    for name, path in sources():
        if in_local(name):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and "LocalBackend" in ast.unparse(node.args[1])
                and "Config" not in ast.unparse(node.args[1])
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []
