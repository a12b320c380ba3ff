"""Upstream's import paths (below ``kubeflow.trainer``) work below ``trainer_sdk``."""

from __future__ import annotations

import importlib

import pytest
import trainer_sdk
from trainer_sdk import constants, types


@pytest.mark.parametrize(
    ("module", "name", "same_as"),
    [
        ("api.trainer_client", "TrainerClient", trainer_sdk.TrainerClient),
        ("types.types", "Runtime", trainer_sdk.Runtime),
        ("types.types", "CustomTrainer", types.CustomTrainer),
        ("types.types", "TrainJobTemplate", trainer_sdk.TrainJobTemplate),
        ("constants.constants", "NODE", constants.NODE),
        ("constants.constants", "NPU_LABEL", "huawei.com/Ascend910"),
        ("constants.constants", "TRAINJOB_COMPLETE", "Complete"),
        (
            "backends.localprocess.types",
            "LocalProcessBackendConfig",
            trainer_sdk.LocalProcessBackendConfig,
        ),
        (
            "backends.localprocess.backend",
            "LocalProcessBackendConfig",
            trainer_sdk.LocalProcessBackendConfig,
        ),
        ("backends.container.types", "ContainerBackendConfig", trainer_sdk.ContainerBackendConfig),
        ("backends.container.types", "TrainingRuntimeSource", trainer_sdk.TrainingRuntimeSource),
        ("backends.kubernetes.utils", "update_trainjob_status", trainer_sdk.update_trainjob_status),
        ("backends.kubernetes.utils", "get_tpu_num_nodes", trainer_sdk.get_tpu_num_nodes),
        ("options", "RuntimePatch", trainer_sdk.RuntimePatch),
    ],
)
def test_upstreams_path_gives_the_same_object(module: str, name: str, same_as: object) -> None:
    found = getattr(importlib.import_module(f"trainer_sdk.{module}"), name)
    assert found is same_as or (isinstance(same_as, str) and found == same_as)


def test_upstreams_module_imports_work_as_written() -> None:
    from trainer_sdk.backends.local.backend import LocalBackend
    from trainer_sdk.backends.localprocess.backend import LocalProcessBackend
    from trainer_sdk.constants import constants as upstream_constants
    from trainer_sdk.types import types as upstream_types

    assert upstream_constants.DEFAULT_TRAINING_RUNTIME == "torch-distributed"
    assert upstream_types.RuntimeKind is trainer_sdk.RuntimeKind
    assert LocalProcessBackend is LocalBackend


def test_the_package_exports_upstreams_names() -> None:
    upstream_all = {
        "TrainingRuntimeSource",
        "get_tpu_num_nodes",
        "update_trainjob_status",
        "LocalProcessBackendConfig",
        "ContainerBackendConfig",
        "KubernetesBackendConfig",
        "DATASET_PATH",
        "MODEL_PATH",
    }
    assert upstream_all <= set(trainer_sdk.__all__)


def test_the_lazy_export_table_and_all_name_the_same_objects() -> None:
    """``__all__`` stays a literal list (type checkers read it), so it is checked against the
    table ``__getattr__`` loads from, and every name there resolves to what its module holds."""
    table = trainer_sdk._MODULE_OF
    assert set(trainer_sdk.__all__) == {*table, "__version__"}
    for name, module in table.items():
        assert getattr(trainer_sdk, name) is getattr(importlib.import_module(module), name)
