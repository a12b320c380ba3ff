"""One meaning per name: a constant exported under the same spelling by several packages is the
same thing everywhere (re-exported, or kept for upstream compatibility with the same value)."""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import Any

# Modules whose __all__ lists constants (the SDK's mirror upstream's kubeflow.trainer.constants).
MODULES = (
    "trainer_api",
    "trainer_runtime",
    "trainer_runtime.constants",
    "trainer_controller",
    "trainer_sdk",
    "trainer_sdk.constants",
    "trainer_search",
    "mpi_runtime",
    "data_cache_manifests",
    "trainer_data_cache",
)


def exported_constants() -> dict[str, list[tuple[str, Any]]]:
    """UPPER_CASE names in each module's __all__ -> [(module, value), ...]."""
    found: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            if attribute.isupper():
                found[attribute].append((name, getattr(module, attribute)))
    return found


def test_a_shared_spelling_means_one_value() -> None:
    differing = {
        name: places
        for name, places in exported_constants().items()
        if len({repr(value) for _, value in places}) > 1
    }
    assert differing == {}


def test_the_check_sees_names_shared_across_packages() -> None:
    shared = {name for name, places in exported_constants().items() if len(places) > 1}
    assert {"GROUP", "TRAINING_RUNTIME_KIND", "TOKEN_ENV"} <= shared
