"""TRLConfig(gems_kernels=True): checked at submit, and a short fine-tune through the platform
whose model trains on gems' fused kernels (Triton's interpreter on this CPU) to the same losses
as the same job without them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from trainer_sdk import QAT, InvalidTrainJobError, TrainerClient, TRLConfig
from trainer_sdk.training.engines.trl import ENGINE

from .conftest import run_to_completion

STEPS = 3


def test_the_switch_becomes_an_engine_argument() -> None:
    assert "--gems_kernels=true" in ENGINE.trainer(TRLConfig(gems_kernels=True), None).args
    assert not any("gems" in arg for arg in ENGINE.trainer(TRLConfig(), None).args)


def test_bad_switches_are_refused_naming_the_field() -> None:
    for config, message in (
        (TRLConfig(gems_kernels="yes"), "expected a bool, got 'yes'"),  # type: ignore[arg-type]
        (
            TRLConfig(gems_kernels=True, overrides={"use_liger_kernel": True}),
            "Liger's kernels (overrides['use_liger_kernel']) patch the same layers; choose one",
        ),
        (
            TRLConfig(gems_kernels=True, quantization_aware=QAT()),
            "not with quantization_aware: its fake-quantized linears are what QAT trains, and "
            "the gems patch computes those layers itself; choose one",
        ),
    ):
        with pytest.raises(InvalidTrainJobError) as raised:
            ENGINE.trainer(config, None)
        assert {e.field: e.message for e in raised.value.errors} == {
            "TRLConfig.gems_kernels": message
        }


@pytest.mark.e2e
def test_a_fine_tune_on_gems_kernels_matches_the_plain_one(
    client: TrainerClient, tiny_model: Path, chat_file: Path
) -> None:
    losses = {}
    for gems in (False, True):
        config = TRLConfig(
            max_steps=STEPS, batch_size=2, learning_rate=2e-3, seed=7, gems_kernels=gems
        )
        name, _ = run_to_completion(client, config, tiny_model, chat_file)
        logs = "\n".join(client.get_job_logs(name))
        assert ("model patched with gems kernels" in logs) is gems
        points = client.get_job_metrics(name)
        losses[gems] = [p.values["loss"] for p in points if "loss" in p.values]
    assert len(losses[True]) == STEPS
    for patched, plain in zip(losses[True], losses[False], strict=True):
        assert math.isclose(patched, plain, rel_tol=1e-4), losses
