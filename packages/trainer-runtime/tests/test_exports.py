"""The package root exports its public names lazily: importing one module costs only that module."""

from __future__ import annotations

import importlib
import subprocess
import sys

import trainer_runtime


def test_the_lazy_export_table_and_all_name_the_same_objects() -> None:
    table = trainer_runtime._MODULE_OF
    assert set(trainer_runtime.__all__) == {*table, "__version__"}
    for name, module in table.items():
        assert getattr(trainer_runtime, name) is getattr(importlib.import_module(module), name)
    assert isinstance(trainer_runtime.__version__, str)
    assert set(trainer_runtime.__all__) <= set(dir(trainer_runtime))


def test_a_pure_module_imports_without_the_api_models() -> None:
    """``trainer_runtime.conditions`` (the local supervisor's) loads neither pydantic nor the
    TrainJob models, which cost a third of a second at every local job's start."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, trainer_runtime.conditions; "
            "print(sorted(m for m in ('pydantic', 'trainer_api') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert loaded.strip() == "[]"
