"""Each package's public API is exactly what its ``__all__`` lists, ``__version__`` included."""

import importlib
from pathlib import Path
from types import ModuleType

import pytest

PACKAGES = (
    "trainer_api",
    "trainer_controller",
    "trainer_runtime",
    "trainer_sdk",
    "trainer_search",
    "gems_kernels",
    "trainer_data_cache",
    "data_cache_manifests",
    "mpi_runtime",
    "kube_standin",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    """Through ``dir`` and ``getattr``: a package may load its names on first use (PEP 562)."""
    package = importlib.import_module(name)
    public = {
        attribute
        for attribute in dir(package)
        if not attribute.startswith("_") and not isinstance(getattr(package, attribute), ModuleType)
    }
    assert set(package.__all__) == public | {"__version__"}


@pytest.mark.parametrize("name", PACKAGES)
def test_version_is_the_release_version(name: str) -> None:
    version = (Path(__file__).resolve().parents[1] / "VERSION").read_text().strip()
    assert importlib.import_module(name).__version__ == version
