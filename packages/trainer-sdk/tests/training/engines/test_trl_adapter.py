"""TRLConfig -> TRL arguments, and every bad setting refused at submit naming its field."""

from __future__ import annotations

import pytest
from trainer_sdk import (
    ChatDataset,
    DataFormat,
    DataType,
    InvalidTrainJobError,
    LoraConfig,
    TorchTuneInstructDataset,
    TRLConfig,
)
from trainer_sdk.training.engines import trl
from trainer_sdk.training.engines.trl import ENGINE


def test_settings_become_trls_own_arguments() -> None:
    config = TRLConfig(
        num_nodes=2,
        dtype=DataType.BF16,
        batch_size=4,
        epochs=2,
        learning_rate=2e-4,
        max_steps=30,
        gradient_accumulation_steps=2,
        max_seq_len=512,
        device="cpu",
        save_steps=10,
        seed=3,
        peft_config=LoraConfig(
            lora_rank=8, lora_alpha=16, lora_dropout=0.05, apply_lora_to_mlp=True
        ),
        dataset_preprocess_config=ChatDataset(
            source=DataFormat.JSON, split="train[:50]", column_map={"messages": "turns"}
        ),
        overrides={
            "warmup_steps": 3,
            "lr_scheduler_type": "cosine",
            "gradient_checkpointing": True,
        },
    )
    trainer = ENGINE.trainer(config, None)
    assert trainer.command is None  # the runtime's
    assert trainer.args == [
        "--per_device_train_batch_size=4",
        "--num_train_epochs=2",
        "--learning_rate=0.0002",
        "--max_steps=30",
        "--gradient_accumulation_steps=2",
        "--max_length=512",
        "--save_steps=10",
        "--seed=3",
        "--bf16=true",
        "--dtype=bfloat16",
        "--use_cpu=true",
        "--use_peft=true",
        "--lora_target_modules",
        "q_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "--lora_r=8",
        "--lora_alpha=16",
        "--lora_dropout=0.05",
        "--dataset_format=chat",
        "--dataset_source=json",
        "--dataset_split=train[:50]",
        '--column_map={"messages": "turns"}',
        "--warmup_steps=3",
        "--lr_scheduler_type=cosine",
        "--gradient_checkpointing=true",
    ]


def test_an_instruct_data_set_is_upstreams_type() -> None:
    config = TRLConfig(
        dataset_preprocess_config=TorchTuneInstructDataset(
            train_on_input=True, new_system_prompt="Be brief.", column_map={"input": "q"}
        )
    )
    assert ENGINE.trainer(config, None).args == [
        "--dataset_format=instruct",
        "--train_on_input=true",
        "--new_system_prompt=Be brief.",
        '--column_map={"input": "q"}',
    ]


def test_every_bad_setting_is_refused_naming_its_field() -> None:
    config = TRLConfig(
        learning_rate=-1.0,
        max_steps=0,
        batch_size=2.5,  # type: ignore[arg-type]
        device="tpu",
        dtype="bf16",  # type: ignore[arg-type]
        peft_config=LoraConfig(
            lora_rank=0, lora_dropout=1.5, quantize_base=True, apply_lora_to_output=True
        ),
        overrides={
            "learning_rat": 1,
            "warmup_steps": "high",
            "lr_scheduler_type": "sometimes",
            "output_dir": "/elsewhere",
        },
    )
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(config, None)
    fields = {error.field: error.message for error in raised.value.errors}
    assert sorted(fields) == [
        "TRLConfig.batch_size",
        "TRLConfig.device",
        "TRLConfig.dtype",
        "TRLConfig.learning_rate",
        "TRLConfig.max_steps",
        "TRLConfig.overrides['learning_rat']",
        "TRLConfig.overrides['lr_scheduler_type']",
        "TRLConfig.overrides['output_dir']",
        "TRLConfig.overrides['warmup_steps']",
        "TRLConfig.peft_config.apply_lora_to_output",
        "TRLConfig.peft_config.lora_dropout",
        "TRLConfig.peft_config.lora_rank",
        "TRLConfig.peft_config.quantize_base",
    ]
    assert fields["TRLConfig.learning_rate"] == "expected a positive number, got -1.0"
    assert fields["TRLConfig.device"] == "expected one of ['cpu', 'cuda'], got 'tpu'"
    assert "not an argument of TRL" in fields["TRLConfig.overrides['learning_rat']"]
    assert fields["TRLConfig.overrides['warmup_steps']"] == "expected a float, got 'high'"
    assert "set by the runtime" in fields["TRLConfig.overrides['output_dir']"]
    assert "QLoRA is not supported" in fields["TRLConfig.peft_config.quantize_base"]


def test_the_argument_table_is_the_installed_trls() -> None:
    """``trl_arguments.json`` lists what the pinned TRL's parser takes; regenerate it with
    ``sft.argument_table()`` after changing the pin."""
    from trainer_sdk.training.engines import sft

    assert trl.argument_kinds() == sft.argument_table()
