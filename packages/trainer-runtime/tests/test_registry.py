"""The registry: one explicit plugin order, per extension point."""

from __future__ import annotations

import pytest
from trainer_runtime import PLUGINS, framework


@pytest.mark.parametrize(
    ("point", "names"),
    [
        pytest.param(
            framework.Validates,
            ["Torch", "MPI", "JAX", "XGBoost", "Flux", "Checkpoint", "ClaimSource", "DataCache"],
            id="validate",
        ),
        pytest.param(
            framework.EnforcesMLPolicy,
            ["PlainML", "Torch", "MPI", "JAX", "XGBoost", "Flux"],
            id="ml-policy",
        ),
        pytest.param(
            framework.EnforcesPodGroupPolicy, ["Coscheduling", "Volcano"], id="pod-group-policy"
        ),
        pytest.param(
            framework.EnforcesPodSpec,
            ["TrainerStatus", "Checkpoint", "ClaimSource", "DataCache"],
            id="pod-spec",
        ),
        pytest.param(framework.PreBuilds, [], id="pre-build"),
        pytest.param(
            framework.Builds,
            ["MPI", "Flux", "Coscheduling", "Volcano", "TrainerStatus", "DataCache", "JobSet"],
            id="build",
        ),
        pytest.param(framework.DerivesStatus, ["JobSet"], id="status"),
    ],
)
def test_plugins_per_extension_point_in_registry_order(point: type, names: list[str]) -> None:
    assert [plugin.name for plugin in framework.plugins_for(point, PLUGINS)] == names


def test_every_plugin_has_a_unique_name() -> None:
    names = [plugin.name for plugin in PLUGINS]
    assert len(set(names)) == len(names)
    assert all(isinstance(plugin, framework.Plugin) for plugin in PLUGINS)
