"""Model families: the model built from ``config.json`` with torchtune's builders computes what
transformers computes from the same checkpoint, judged in float64; a checkpoint the family cannot
represent is refused naming the field. One probe in torchtune's environment checks every family."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

# Per family: logits of both models on 300 positions, in float64; the same with one dimension
# changed (a faithful build must be sensitive to it); the refusals of two unsupported configs.
PROBE = r"""
import json, sys, torch
from transformers import AutoModelForCausalLM
from torchtune.training import FullModelHFCheckpointer
from trainer_sdk.training.engines.torchtune import families

def probe(directory, component, changed):
    family = families.family_of(component)
    config = families.read_config(directory)
    weights = FullModelHFCheckpointer(
        directory, families.weight_files(directory), family.model_type, directory + "-out"
    ).load_checkpoint()["model"]
    reference = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, config["vocab_size"], (2, 300), generator=generator)
    with torch.no_grad():
        expected = reference(tokens).logits

    def error(arguments):
        model = family.build(**arguments).double()
        model.load_state_dict(weights)
        with torch.no_grad():
            return (model(tokens) - expected).abs().max().item()

    arguments = family.arguments(config)
    key, value = changed.split("=")
    result = {
        "family": family.name,
        "error": error(arguments),
        "scale": expected.abs().max().item(),
        "error_changed": error({**arguments, key: type(arguments[key])(value)}),
    }
    for field, bad in (("rope_parameters", {"rope_type": "yarn"}), ("hidden_act", "gelu")):
        try:
            family.arguments({**config, field: bad})
        except families.CheckpointError as refused:
            result[field] = str(refused)
    return result

cases = json.loads(sys.argv[1])
print(json.dumps([probe(*case) for case in cases]))
"""
CASES = {
    "llama3_2": ("torchtune.models.llama3_2.lora_llama3_2_1b", "scale_factor=8"),
    "qwen2_5": ("torchtune.models.qwen2_5.qwen2_5_1_5b_instruct", "rope_base=10000"),
}
REFUSALS = {
    "llama3_2": "config.json: rope_scaling.rope_type is 'yarn'; the llama3_2 family needs 'llama3'",
    "qwen2_5": "config.json: rope_scaling.rope_type is 'yarn'; the qwen2_5 family needs plain RoPE",
}


@pytest.fixture(scope="module")
def probed(torchtune_python: str, tiny_models: Path) -> dict[str, dict[str, Any]]:
    cases = [[str(tiny_models / family), *case] for family, case in CASES.items()]
    run = subprocess.run(
        [torchtune_python, "-c", PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return {result["family"]: result for result in json.loads(run.stdout.splitlines()[-1])}


@pytest.mark.e2e
@pytest.mark.parametrize("family", sorted(CASES))
def test_model_from_config_json_computes_what_transformers_computes(
    probed: dict[str, dict[str, Any]], family: str
) -> None:
    result = probed[family]
    # torchtune normalises in float32 whatever the dtype: agreement to float32's precision, and
    # a wrong RoPE scaling or base (a misread config.json) is 100 times further off.
    assert result["error"] < 1e-5 * result["scale"]
    assert result["error_changed"] > 1e-3 * result["scale"]
    assert result["rope_parameters"] == REFUSALS[family]
    assert result["hidden_act"] == "config.json: hidden_act is 'gelu'; expected 'silu'"
