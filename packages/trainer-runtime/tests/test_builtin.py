"""The built-in runtimes: parse, names, and equivalence with upstream's (images renamed)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import pytest
from runtime_cases import load_yaml, upstream_dir
from trainer_runtime import builtin_runtimes

EXPECTED_NAMES = [
    "deepspeed-distributed",
    "jax-distributed",
    "mlx-distributed",
    "torch-distributed",
    "torch-distributed-with-cache",
    "torchtune-llama3.2-1b",
    "torchtune-llama3.2-3b",
    "torchtune-qwen2.5-1.5b",
    "trl-cpu",
    "trl-gpu",
    "xgboost-distributed",
]
# This project's runtimes, which upstream does not have.
OWN_RUNTIMES = ("trl-cpu", "trl-gpu")
# Upstream image and account names, and torchtune's GPU recipe, -> this project's.
RENAMES = {
    "ghcr.io/kubeflow/trainer/": "ghcr.io/trainer-platform/",
    "kubeflow-trainer-cache-initializer": "trainer-cache-initializer",
    "full_finetune_distributed": "trainer_sdk/training/engines/torchtune/recipe.py",
}


def _strings_mapped(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string in it."""
    if isinstance(value, dict):
        return {key: _strings_mapped(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_strings_mapped(item, change) for item in value]
    return change(value) if isinstance(value, str) else value


def _renamed(text: str) -> str:
    for old, new in RENAMES.items():
        text = text.replace(old, new)
    return text


def _untagged(text: str) -> str:
    """This project's image references without the release's tag (a version number; a tag
    such as ``latest`` that upstream's reference has too is kept)."""
    return re.sub(r"^(ghcr\.io/trainer-platform/[a-z0-9._-]+):\d+\.\d+\.\d+[\w.-]*$", r"\1", text)


def test_builtin_runtime_names() -> None:
    assert sorted(builtin_runtimes()) == EXPECTED_NAMES


def test_builtin_runtimes_use_no_upstream_project_images() -> None:
    for name, runtime in builtin_runtimes().items():
        assert "ghcr.io/kubeflow" not in str(runtime.to_dict()), name


@functools.cache
def _upstream_runtimes() -> dict[str, dict[str, Any]]:
    root = upstream_dir()
    if root is None:
        return {}
    folder = root / "kubeflow-trainer" / "manifests" / "base" / "runtimes"
    docs = [doc for path in sorted(folder.rglob("*.yaml")) for doc in load_yaml(path)]
    return {
        doc["metadata"]["name"]: doc for doc in docs if doc.get("kind") == "ClusterTrainingRuntime"
    }


@pytest.mark.skipif(
    upstream_dir() is None, reason="upstream reference data not found (set TRAINER_UPSTREAM_DIR)"
)
@pytest.mark.parametrize("name", [name for name in EXPECTED_NAMES if name not in OWN_RUNTIMES])
def test_builtin_runtime_equals_upstream_with_project_images(name: str) -> None:
    upstream = _upstream_runtimes()
    assert name in upstream, f"upstream has no runtime {name}"
    ours = _strings_mapped(builtin_runtimes()[name].to_dict(), _untagged)
    assert ours == _strings_mapped(upstream[name], _renamed)
