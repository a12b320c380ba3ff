"""TRLConfig.method -> TRL's arguments for DPO, KTO, ORPO and distillation, and every bad method
setting refused at submit naming its field (GRPO's: test_rewards)."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk import (
    DPO,
    KTO,
    ORPO,
    ChatDataset,
    Distillation,
    HuggingFaceModelInitializer,
    InvalidTrainJobError,
    PreferenceDataset,
    PromptDataset,
    TRLConfig,
)
from trainer_sdk.training.engines.trl import ENGINE


def _args(config: TRLConfig) -> list[str]:
    return ENGINE.trainer(config, None).args


def test_dpo_kto_and_orpo_become_trls_arguments() -> None:
    dpo = TRLConfig(
        method=DPO(beta=0.2, loss_type="ipo", reference_model=False),
        dataset_preprocess_config=PreferenceDataset(column_map={"chosen": "better"}),
        overrides={"precompute_ref_batch_size": 8},
    )
    assert _args(dpo) == [
        "--method=dpo",
        "--beta=0.2",
        "--loss_type",
        "ipo",
        "--precompute_ref_log_probs=true",
        "--dataset_format=preference",
        '--column_map={"chosen": "better"}',
        "--precompute_ref_batch_size=8",
    ]
    assert _args(TRLConfig(method=DPO())) == ["--method=dpo"]  # the reference model kept
    kto = TRLConfig(method=KTO(beta=0.5, desirable_weight=1.0, undesirable_weight=1.5))
    assert _args(kto) == [
        "--method=kto",
        "--beta=0.5",
        "--desirable_weight=1.0",
        "--undesirable_weight=1.5",
    ]
    orpo = TRLConfig(method=ORPO(beta=0.2), dataset_preprocess_config=PreferenceDataset())
    assert _args(orpo) == ["--method=orpo", "--beta=0.2", "--dataset_format=preference"]
    assert "--method" not in " ".join(_args(TRLConfig()))  # supervised: the default


def test_distillation_fetches_its_teacher_from_the_initializers_uri(tmp_path: Path) -> None:
    teacher = Distillation(
        teacher=HuggingFaceModelInitializer(str(tmp_path)),
        beta=0.0,
        temperature=0.9,
        max_new_tokens=32,
    )
    assert _args(TRLConfig(method=teacher, dataset_preprocess_config=PromptDataset())) == [
        "--method=distillation",
        "--max_completion_length=32",
        "--temperature=0.9",
        f"--teacher_storage_uri={tmp_path.as_uri()}",
        "--beta=0.0",
        "--dataset_format=prompt",
    ]
    hub = Distillation(teacher=HuggingFaceModelInitializer("Qwen/Qwen2.5-1.5B-Instruct"))
    assert "--teacher_storage_uri=hf://Qwen/Qwen2.5-1.5B-Instruct" in _args(TRLConfig(method=hub))


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        pytest.param(
            TRLConfig(method=DPO(beta=0)),
            "TRLConfig.method.beta",
            "expected a positive number, got 0",
            id="dpo-beta",
        ),
        pytest.param(
            TRLConfig(method=DPO(loss_type=["sigmoid"])),  # type: ignore[arg-type]
            "TRLConfig.method.loss_type",
            "expected the name of a TRL DPO loss, got ['sigmoid']",
            id="dpo-loss-type",
        ),
        pytest.param(
            TRLConfig(method=DPO(reference_model="no")),  # type: ignore[arg-type]
            "TRLConfig.method.reference_model",
            "expected True or False, got 'no'",
            id="dpo-reference",
        ),
        pytest.param(
            TRLConfig(method=KTO(undesirable_weight=-1.0)),
            "TRLConfig.method.undesirable_weight",
            "expected a positive number, got -1.0",
            id="kto-weight",
        ),
        pytest.param(
            TRLConfig(method=ORPO(beta=-0.1)),
            "TRLConfig.method.beta",
            "expected a positive number, got -0.1",
            id="orpo-beta",
        ),
        pytest.param(
            TRLConfig(method=Distillation(teacher="/models/big")),  # type: ignore[arg-type]
            "TRLConfig.method.teacher",
            "expected a HuggingFaceModelInitializer or S3ModelInitializer, got str",
            id="distillation-teacher",
        ),
        pytest.param(
            TRLConfig(method=Distillation(teacher=HuggingFaceModelInitializer("org/m"), beta=1.5)),
            "TRLConfig.method.beta",
            "expected a number in [0, 1], got 1.5",
            id="distillation-beta",
        ),
        pytest.param(
            TRLConfig(method=Distillation(teacher=HuggingFaceModelInitializer("pvc://m/big"))),
            "TRLConfig.method.teacher.storage_uri",
            "expected hf://, s3:// or a path: the trainer's main rank fetches the teacher itself, "
            "and no claim is mounted there; got 'pvc://m/big'",
            id="distillation-teacher-on-a-claim",
        ),
        pytest.param(
            TRLConfig(overrides={"method": "grpo"}),
            "TRLConfig.overrides['method']",
            "set by TRLConfig.method",
            id="method-in-overrides",
        ),
        pytest.param(
            TRLConfig(method="dpo"),  # type: ignore[arg-type]
            "TRLConfig.method",
            "expected None (supervised fine-tuning), DPO, KTO, ORPO, GRPO or Distillation, got str",
            id="method-type",
        ),
        pytest.param(
            TRLConfig(method=DPO(), dataset_preprocess_config=ChatDataset()),
            "TRLConfig.dataset_preprocess_config",
            "the dpo method takes a PreferenceDataset, got ChatDataset",
            id="dpo-chat-data",
        ),
        pytest.param(
            TRLConfig(dataset_preprocess_config=PreferenceDataset()),
            "TRLConfig.dataset_preprocess_config",
            "the sft method takes a TorchTuneInstructDataset or ChatDataset, got PreferenceDataset",
            id="sft-preference-data",
        ),
        pytest.param(
            TRLConfig(method=KTO(), overrides={"loss_weights": [1.0]}),
            "TRLConfig.overrides['loss_weights']",
            "not an argument of TRL's KTOConfig or ModelConfig or of this engine",
            id="kto-takes-no-dpo-argument",
        ),
        pytest.param(
            TRLConfig(method=ORPO(), overrides={"precompute_ref_log_probs": True}),
            "TRLConfig.overrides['precompute_ref_log_probs']",
            "not an argument of TRL's ORPOConfig or ModelConfig or of this engine",
            id="orpo-takes-no-reference",
        ),
    ],
)
def test_a_bad_method_setting_is_refused_naming_its_field(
    config: TRLConfig, field: str, message: str
) -> None:
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(config, None)
    assert [(error.field, error.message) for error in raised.value.errors] == [(field, message)]
