"""The torchtune engine's submit side: settings under the recipe's keys, overrides checked
against what the recipe reads, bad values refused naming the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import (
    BuiltinTrainer,
    DataType,
    HuggingFaceDatasetInitializer,
    Initializer,
    LocalBackendConfig,
    LoraConfig,
    MissingPackageError,
    TorchTuneConfig,
    TrainerClient,
)
from trainer_sdk.errors import InvalidTrainJobError
from trainer_sdk.training.engines.torchtune import ENGINE, RECIPE_KEYS


def _args(**fields: Any) -> list[str]:
    return ENGINE.trainer(TorchTuneConfig(**fields), None).args


def _errors(**fields: Any) -> list[str]:
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(TorchTuneConfig(**fields), None)
    return [str(error) for error in raised.value.errors]


def test_settings_become_the_recipes_keys_after_upstreams_fields() -> None:
    assert _args(
        dtype=DataType.FP32,
        batch_size=2,
        learning_rate=3e-4,
        max_steps=20,
        gradient_accumulation_steps=4,
        max_seq_len=256,
        device="cpu",
        save_steps=5,
        seed=7,
        peft_config=LoraConfig(lora_rank=4, lora_alpha=8, lora_dropout=0.1),
    ) == [
        "dtype=fp32",
        "batch_size=2",
        "model.lora_rank=4",
        "model.lora_alpha=8",
        "model.lora_dropout=0.1",
        "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
        "optimizer.lr=0.0003",
        "max_steps=20",
        "gradient_accumulation_steps=4",
        "tokenizer.max_seq_len=256",
        "device=cpu",
        "save_every_n_steps=5",
        "seed=7",
    ]


def test_overrides_come_last_with_values_as_torchtunes_command_line_reads_them() -> None:
    assert _args(
        overrides={
            "optimizer.weight_decay": 0.01,
            "clip_grad_norm": None,
            "shuffle": False,
            "dataset.column_map": {"input": "question", "output": "answer"},
            "lr_scheduler.num_warmup_steps": 0,
            "metric_logger._component_": "torchtune.training.metric_logging.StdoutLogger",
        },
        epochs=2,
    ) == [
        "epochs=2",
        "optimizer.weight_decay=0.01",
        "clip_grad_norm=null",
        "shuffle=false",
        'dataset.column_map={"input": "question", "output": "answer"}',
        "lr_scheduler.num_warmup_steps=0",
        "metric_logger._component_=torchtune.training.metric_logging.StdoutLogger",
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"overrides": {"optimzer.lr": 1e-3}},
            [
                "TorchTuneConfig.overrides['optimzer.lr']: the torchtune recipe reads no "
                f"'optimzer'; its keys are {sorted(RECIPE_KEYS)}"
            ],
            id="misspelt-key",
        ),
        pytest.param(
            {"overrides": {"optimizer_in_bwd": True, "profiler.enabled": True}},
            [
                "TorchTuneConfig.overrides['optimizer_in_bwd']: must be false: the recipe steps "
                "the optimizer after backward",
                "TorchTuneConfig.overrides['profiler.enabled']: must be false: the recipe does "
                "not run torchtune's profiler",
            ],
            id="settings-the-recipe-refuses",
        ),
        pytest.param(
            {"learning_rate": -1.0, "max_steps": 0, "device": "tpu", "save_steps": 1.5},
            [
                "TorchTuneConfig.learning_rate: expected a positive number, got -1.0",
                "TorchTuneConfig.max_steps: expected a whole number of at least 1, got 0",
                "TorchTuneConfig.device: expected one of ['cpu', 'cuda'], got 'tpu'",
                "TorchTuneConfig.save_steps: expected a whole number of at least 1, got 1.5",
            ],
            id="bad-settings-each-named",
        ),
        pytest.param(
            {"peft_config": LoraConfig(lora_rank=0, lora_dropout=1.0, lora_attn_modules=[])},
            [
                "TorchTuneConfig.peft_config.lora_rank: expected a whole number of at least 1, "
                "got 0",
                "TorchTuneConfig.peft_config.lora_dropout: expected a number in [0, 1), got 1.0",
                "TorchTuneConfig.peft_config.lora_attn_modules: expected a non-empty list of "
                "module names, got []",
            ],
            id="bad-lora",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    fields: dict[str, Any], expected: list[str]
) -> None:
    assert _errors(**fields) == expected


def test_upstreams_call_on_a_python_without_torchtune_is_refused_before_it_starts(
    tmp_path: Path,
) -> None:
    """The job's Python (a fresh venv's) cannot import torchtune: train() names the install
    command, and no job is made."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    client = TrainerClient(
        LocalBackendConfig(
            root=tmp_path / "jobs", python=str(venv / "bin" / "python"), accelerators_on_cpu=True
        )
    )
    with pytest.raises(MissingPackageError) as raised:
        client.train(
            runtime=client.get_runtime("torchtune-llama3.2-1b"),
            trainer=BuiltinTrainer(TorchTuneConfig(dtype=DataType.FP32, batch_size=2, epochs=1)),
        )
    assert str(raised.value).endswith('install it with: pip install "trainer-sdk[torchtune]"')
    assert not (tmp_path / "jobs").exists() or list((tmp_path / "jobs").iterdir()) == []


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param(
            "./data/alpaca.jsonl",
            ["dataset.data_files=/workspace/dataset/alpaca.jsonl", "dataset.source=json"],
            id="local-file-its-format-from-its-suffix",
        ),
        pytest.param(
            "/data/table.csv",
            ["dataset.data_files=/workspace/dataset/table.csv", "dataset.source=csv"],
            id="absolute-path",
        ),
        pytest.param("./data", ["dataset.data_dir=/workspace/dataset/."], id="local-directory"),
        pytest.param(
            "hf://tatsu-lab/alpaca", ["dataset.data_dir=/workspace/dataset/."], id="upstreams-repo"
        ),
    ],
)
def test_the_data_set_the_initializer_writes_is_where_torchtune_reads(
    uri: str, expected: list[str]
) -> None:
    initializer = Initializer(dataset=HuggingFaceDatasetInitializer(uri))
    assert ENGINE.trainer(TorchTuneConfig(), initializer).args == expected
