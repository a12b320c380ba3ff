"""What a ``TARGET`` names (``FILE.py``, ``FILE.py:function``, ``module:function``) in the form
``TrainerClient.train`` takes: a function for ``CustomTrainer``, or a whole script's command.

The ``trainer run`` and ``trainer optimize`` commands resolve their target here, so that the CLI
builds no job of its own. Bad input raises ``ValueError`` naming ``TARGET``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer_sdk import types
from trainer_sdk.manifests.trainjobs import command_for_code

__all__ = ["load_function", "runs_nothing", "script_command"]

_FILE_FUNCTION = re.compile(r"^(?P<file>.+\.py):(?P<function>[A-Za-z_]\w*)$")
_INERT = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Pass,
)


def _import_file(path: Path) -> Any:
    """The module in ``path``, imported (its top level runs here, as an import would)."""
    if not path.is_file():
        raise ValueError(f"TARGET: no such file {str(path)!r}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"TARGET: cannot import {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: report whatever it raised
        raise ValueError(
            f"TARGET: importing {str(path)!r} raised {type(error).__name__}: {error}"
        ) from error
    return module


def load_function(target: str) -> Callable[..., Any]:
    """``module:function`` or ``FILE.py:function`` as the function itself."""
    if match := _FILE_FUNCTION.match(target):
        where, function_name = f"file {match['file']!r}", match["function"]
        module = _import_file(Path(match["file"]))
    else:
        module_name, separator, function_name = target.partition(":")
        if not separator:
            raise ValueError(
                f"TARGET: expected FILE.py, FILE.py:function or module:function, got {target!r}"
            )
        where = f"module {module_name!r}"
        sys.path.insert(0, str(Path.cwd()))
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise ValueError(f"TARGET: cannot import module {module_name!r}: {error}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"TARGET: {where} has no function {function_name!r}")
    return function  # type: ignore[no-any-return]  # callable() checked it


def runs_nothing(source: str) -> list[str] | None:
    """The functions a script defines when its top level only defines things (so running it
    would do nothing), else None."""
    tree = ast.parse(source)
    defined = [
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for node in tree.body:
        if isinstance(node, _INERT):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not any(
            isinstance(child, ast.Call) for child in ast.walk(node)
        ):
            continue
        return None
    return defined or None


def script_command(runtime: types.Runtime, path: Path) -> list[str]:
    """The trainer command that runs the script ``path`` on every node of ``runtime`` (for
    ``TrainerCommand``); refused when the script only defines functions."""
    if not path.is_file():
        raise ValueError(f"TARGET: no such file {str(path)!r}")
    source = path.read_text()
    try:
        defined = runs_nothing(source)
    except SyntaxError as error:
        raise ValueError(f"TARGET: {path} is not valid Python: {error}") from None
    if defined:
        raise ValueError(
            f"TARGET: {path} defines {', '.join(defined)} but runs nothing; "
            f"run a function with `trainer run {path}:{defined[-1]}`, or call it in the file"
        )
    return command_for_code(runtime, source, path.name)
