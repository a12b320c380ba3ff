"""The public dataclasses as upstream's callers build them."""

from __future__ import annotations

import enum

import pytest
from trainer_sdk import (
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    Runtime,
    RuntimeKind,
    RuntimeTrainer,
    TrainerType,
    TrainJobTemplate,
)
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest

from ..conftest import make_runtime


def train() -> None:
    pass


def test_positional_order_is_upstreams() -> None:
    trainer = RuntimeTrainer(TrainerType.CUSTOM_TRAINER, "torch", "pytorch/pytorch:2")
    runtime = Runtime("torch-distributed", trainer, RuntimeKind.TRAINING_RUNTIME, "model")
    assert (runtime.kind, runtime.pretrained_model, trainer.image) == (
        RuntimeKind.TRAINING_RUNTIME,
        "model",
        "pytorch/pytorch:2",
    )
    custom = CustomTrainer(train, {"lr": 0.1}, "my-image:1")
    assert (custom.func_args, custom.image) == ({"lr": 0.1}, "my-image:1")


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: Runtime("r", make_runtime().trainer),  # type: ignore[call-arg]
            id="runtime-without-kind",
        ),
        pytest.param(
            lambda: RuntimeTrainer(TrainerType.CUSTOM_TRAINER, "torch"),  # type: ignore[call-arg]
            id="trainer-without-image",
        ),
    ],
)
def test_upstreams_required_fields_are_required(build: object) -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        build()  # type: ignore[operator]


def test_runtime_kind_is_a_plain_enum() -> None:
    assert type(RuntimeKind.TRAINING_RUNTIME).__mro__[1:] == (enum.Enum, object)
    assert RuntimeKind("TrainingRuntime") is RuntimeKind.TRAINING_RUNTIME
    assert RuntimeKind.TRAINING_RUNTIME != "TrainingRuntime"


def test_a_hand_built_training_runtime_is_referenced_as_one() -> None:
    runtime = Runtime("mine", make_runtime().trainer, RuntimeKind.TRAINING_RUNTIME)
    manifest = build_trainjob_manifest("job", runtime, CustomTrainer(train))
    assert manifest["spec"]["runtimeRef"] == {
        "name": "mine",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
    }


def test_a_template_takes_a_runtime_name() -> None:
    template = TrainJobTemplate(trainer=CustomTrainer(train), runtime="torch-distributed")
    assert dict(**template)["runtime"] == "torch-distributed"


@pytest.mark.parametrize(
    ("initializer", "uri", "expected"),
    [
        pytest.param(
            HuggingFaceDatasetInitializer, "hf://tatsu-lab/alpaca", "hf://tatsu-lab/alpaca"
        ),
        pytest.param(HuggingFaceDatasetInitializer, "tatsu-lab/alpaca", "hf://tatsu-lab/alpaca"),
        pytest.param(
            HuggingFaceDatasetInitializer,
            "tatsu-lab/alpaca/data/train.json",
            "hf://tatsu-lab/alpaca/data/train.json",
        ),
        pytest.param(HuggingFaceModelInitializer, "Qwen/Qwen2.5-1.5B", "hf://Qwen/Qwen2.5-1.5B"),
        pytest.param(HuggingFaceModelInitializer, "hf://gpt2", "hf://gpt2", id="unscoped-model"),
        pytest.param(HuggingFaceDatasetInitializer, "hf://squad", "hf://squad", id="unscoped-data"),
        pytest.param(
            HuggingFaceModelInitializer, "hf://Qwen/Qwen2.5-1.5B", "hf://Qwen/Qwen2.5-1.5B"
        ),
    ],
)
def test_hugging_face_initializers_take_hf_uris_and_bare_repo_names(
    initializer: type, uri: str, expected: str
) -> None:
    config = initializer(storage_uri=uri)
    assert config.storage_uri == uri, "the field keeps what was given, as upstream"
    which = "dataset" if initializer is HuggingFaceDatasetInitializer else "model"
    manifest = build_trainjob_manifest(
        "job", make_runtime(), CustomTrainer(train), Initializer(**{which: config})
    )
    assert manifest["spec"]["initializer"][which]["storageUri"] == expected


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("s3://bucket/data", id="other-scheme"),
        pytest.param("hf://", id="no-repo"),
        pytest.param("hf:///alpaca", id="empty-owner"),
        pytest.param("alpaca", id="bare-no-owner"),
        pytest.param("", id="empty"),
    ],
)
def test_hugging_face_uris_without_a_repo_are_refused(uri: str) -> None:
    with pytest.raises(
        ValueError, match="storage_uri: expected 'hf://<dataset>', 'hf://<user>/<dataset>'"
    ):
        HuggingFaceDatasetInitializer(storage_uri=uri)
