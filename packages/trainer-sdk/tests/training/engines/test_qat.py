"""Quantization-aware training: TRLConfig.quantization_aware -> the engine's arguments, every
bad setting refused at submit naming its field; in process, a tiny Llama (tied and untied word
embeddings) prepared (its state dict the float model's, so checkpoints are), trained, converted,
written and loaded gives the converted model's logits bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torchao.quantization import IntxUnpackedToInt8Tensor
from trainer_sdk import DPO, QAT, InvalidTrainJobError, LoraConfig, TRLConfig
from trainer_sdk.training.engines import qat_model
from trainer_sdk.training.engines.tiny_model import write_tiny_model
from trainer_sdk.training.engines.trl import ENGINE
from transformers import AutoModelForCausalLM, AutoTokenizer


def test_qat_becomes_the_engines_arguments() -> None:
    config = TRLConfig(quantization_aware=QAT(scheme="int4-weight-only", group_size=16))
    assert ENGINE.trainer(config, None).args == [
        "--qat_scheme=int4-weight-only",
        "--qat_group_size=16",
    ]
    assert ENGINE.trainer(TRLConfig(quantization_aware=QAT()), None).args == [
        "--qat_scheme=int8-dynamic-act-int4-weight",
        "--qat_group_size=32",
    ]


def test_bad_qat_settings_are_refused_naming_the_field() -> None:
    config = TRLConfig(
        quantization_aware=QAT(scheme="int2", group_size=0),
        method=DPO(),
        peft_config=LoraConfig(),
        overrides={"qat_group_size": 64},
    )
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(config, None)
    fields = {error.field: error.message for error in raised.value.errors}
    assert "'int8-dynamic-act-int4-weight'" in fields["TRLConfig.quantization_aware.scheme"]
    assert "'int2'" in fields["TRLConfig.quantization_aware.scheme"]
    assert "at least 1, got 0" in fields["TRLConfig.quantization_aware.group_size"]
    assert "supervised fine-tuning" in fields["TRLConfig.method"]
    assert "leave LoRA off" in fields["TRLConfig.peft_config"]
    overridden = fields["TRLConfig.overrides['qat_group_size']"]
    assert overridden == "set by TRLConfig.quantization_aware"
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(TRLConfig(quantization_aware="int4"), None)  # type: ignore[arg-type]
    assert [e.field for e in raised.value.errors] == ["TRLConfig.quantization_aware"]


def test_a_group_size_that_does_not_divide_a_layer_is_refused(tmp_path: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(write_tiny_model(tmp_path / "llama"))
    with pytest.raises(ValueError, match="--qat_group_size: 24 does not divide the input size 32"):
        qat_model.prepare(model, "int8-dynamic-act-int4-weight", 24)


@pytest.mark.parametrize("scheme", ["int8-dynamic-act-int4-weight", "int4-weight-only"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_the_written_model_loads_quantized_with_the_same_logits(
    tmp_path: Path, scheme: str, tied: bool
) -> None:
    directory = write_tiny_model(tmp_path / "llama", tied=tied)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    names = set(model.state_dict())
    model = qat_model.prepare(model, scheme, 32)
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == tied
    assert set(model.state_dict()) == names  # checkpoints and resume see the float model
    ids = tokenizer(["what is the color of the sky blue"] * 2, return_tensors="pt")["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(3):
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    converted = qat_model.convert(model, scheme, 32).eval()
    (tmp_path / "out").mkdir()
    qat_model.write(converted, tokenizer, tmp_path / "out", scheme, 32)

    loaded = qat_model.load_quantized(tmp_path / "out")
    for name, weight in loaded.state_dict().items():
        if name.endswith("proj.weight") or name == "lm_head.weight":
            assert isinstance(weight, IntxUnpackedToInt8Tensor), name
    assert not isinstance(loaded.model.embed_tokens.weight, IntxUnpackedToInt8Tensor)
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, converted(ids).logits)
