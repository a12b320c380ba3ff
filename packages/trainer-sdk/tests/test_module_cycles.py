"""The training-side reporting modules import each other in one direction only (also inside
functions, where a cycle hides until an import order breaks it)."""

from __future__ import annotations

import ast
from pathlib import Path

import trainer_sdk

PACKAGE = Path(trainer_sdk.__file__).parent
REPORTING = ("metrics", "progress", "trainer_status")
TRAINING = "trainer_sdk.training"


def trainer_sdk_imports(module: str) -> set[str]:
    """The ``trainer_sdk`` modules that ``trainer_sdk.<module>`` imports anywhere in its code."""
    found = set()
    for node in ast.walk(ast.parse((PACKAGE / "training" / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module in ("trainer_sdk", TRAINING):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trainer_sdk."):
            found.add(str(node.module).removeprefix(f"{TRAINING}.").split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(
                alias.name.removeprefix(f"{TRAINING}.").split(".")[0]
                for alias in node.names
                if alias.name.startswith("trainer_sdk.")
            )
    return found


def test_metrics_and_progress_do_not_import_each_other_back() -> None:
    """metrics imported progress inside two functions and progress imported metrics inside one."""
    graph = {module: trainer_sdk_imports(module) & set(REPORTING) for module in REPORTING}
    assert graph == {
        "metrics": {"trainer_status"},
        "progress": {"metrics", "trainer_status"},
        "trainer_status": set(),
    }
