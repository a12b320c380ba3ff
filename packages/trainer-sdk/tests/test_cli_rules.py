"""The CLI is thin over ``TrainerClient`` and cheap to start (issue 24): read from its sources and
from a fresh interpreter, so that a change that breaks either rule fails here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[1] / "src" / "trainer_sdk" / "cli"
MODULES = sorted(CLI.glob("*.py"))
# What builds or edits TrainJob manifests; the CLI goes through train() / submit() instead.
MANIFEST_BUILDERS = {"build_trainjob_manifest", "command_for_code", "command_for_function"}
# Loaded by `import trainer_sdk.cli` before this change: none is needed to print --help.
HEAVY_MODULES = [
    "torch",
    "kubernetes",
    "trainer_sdk.ui.server",
    "trainer_sdk.client",
    "trainer_sdk.backends",
    "trainer_api",
    "trainer_runtime",
    "pydantic",
    "optuna",
    "rich",
    "yaml",
]


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """Each import in ``path`` (anywhere, also inside functions): module and names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_cli_imports_no_backend_and_no_private_helper(path: Path) -> None:
    for module, names in imports(path):
        assert not module.startswith("trainer_sdk.backends"), f"{path.name} imports {module}"
        if module.startswith("trainer_sdk.cli") or module.startswith("trainer_sdk.optimizer"):
            private = [name for name in names if name.startswith("_")]
            assert not private, f"{path.name} imports {private} from {module}"
        assert not MANIFEST_BUILDERS & set(names), f"{path.name} builds manifests ({names})"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_cli_does_not_reach_into_a_clients_backend(path: Path) -> None:
    """``client.backend...`` is the backend itself: the CLI asks the client."""
    tree = ast.parse(path.read_text())
    reached = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "backend"
    ]
    assert not reached, f"{path.name} uses .backend on lines {reached}"


def _root_name(node: ast.expr) -> str:
    """``manifest`` for ``manifest["spec"]["trainer"]`` or ``manifest.setdefault``."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_cli_edits_no_manifest(path: Path) -> None:
    """No ``manifest.setdefault(...)`` / ``manifest[...] = ...`` surgery on a TrainJob or runtime
    document: options (``Name``, ``TrainerOverrides``) do that inside ``train`` / ``submit``."""
    edited = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "setdefault":
                edited.append((node.lineno, _root_name(node.func)))
        elif isinstance(node, ast.Assign):
            edited += [
                (node.lineno, _root_name(target))
                for target in node.targets
                if isinstance(target, ast.Subscript)
            ]
    documents = ("manifest", "doc", "spec", "metadata", "trainer", "job")
    surgery = [(line, name) for line, name in edited if name.startswith(documents)]
    assert not surgery, f"{path.name} edits a document at {surgery}"


def test_importing_the_cli_loads_no_heavy_module() -> None:
    probe = (
        "import json, sys; import trainer_sdk.cli; "
        f"print(json.dumps([m for m in {HEAVY_MODULES!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(result.stdout) == []


def test_help_loads_no_heavy_module_either() -> None:
    """``trainer --help`` builds every command's help; still none of them."""
    probe = (
        "import json, sys, contextlib, io\n"
        "from trainer_sdk.cli import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli(['--help'], prog_name='trainer')\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps([m for m in {HEAVY_MODULES!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(result.stdout) == []
