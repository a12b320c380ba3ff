"""The env names the launcher sets are the ones trainer-api refuses in a TrainJob.

trainer-api cannot depend on this package, so it keeps its own list of reserved prefixes; this
test fails when the two drift apart.
"""

import importlib

import pytest
from mpi_runtime import RESERVED_ENV_NAMES, Implementation


def api_mpi_prefixes() -> tuple[str, ...]:
    try:
        trainer_api = importlib.import_module("trainer_api")
    except ImportError:
        pytest.skip("trainer-api is not installed")
    prefixes = getattr(trainer_api, "RESERVED_ENV_PREFIXES", None)
    if prefixes is None or "mpi" not in prefixes:
        pytest.skip("this trainer-api has no RESERVED_ENV_PREFIXES['mpi'] yet")
    return tuple(prefixes["mpi"])


@pytest.mark.parametrize(
    ("impl", "name"),
    [
        pytest.param(impl, name, id=f"{impl.value}-{name}")
        for impl in Implementation
        for name in sorted(RESERVED_ENV_NAMES[impl])
    ],
)
def test_trainer_api_reserves_every_launcher_env_name(impl: Implementation, name: str) -> None:
    prefixes = api_mpi_prefixes()
    assert name.startswith(prefixes), f"{name} ({impl.value}) is not reserved by trainer-api"
