"""TRLConfig(gems_kernels=True): checked at submit; TRL's chunked LM head replaced at its seam
by gems' and computing what TRL's computes; and a short fine-tune through the platform whose
model trains on gems' fused kernels (Triton's interpreter on this CPU), its loss through gems'
head, to the same losses as the same job without them."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
import trl.kernels
import trl.trainer.utils as trl_utils
from trainer_sdk import DPO, QAT, InvalidTrainJobError, TrainerClient, TRLConfig
from trainer_sdk.training.engines import gems_model
from trainer_sdk.training.engines.trl import ENGINE
from transformers import AutoModelForCausalLM

from .conftest import COLORS, run_to_completion

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


def test_the_pinned_trl_has_the_seam() -> None:
    assert gems_model.SEAM == "trl.trainer.utils._ChunkedLogProbFunction"
    assert trl_utils._ChunkedLogProbFunction is trl.kernels.ChunkedLogProbFunction
    assert "_ChunkedLogProbFunction.apply(" in inspect.getsource(trl_utils.add_fused_lm_head)


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """TRL's own head back at the seam after the test."""
    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", trl.kernels.ChunkedLogProbFunction)


def _head_step(path: Path, autocast: bool) -> tuple[Any, dict[str, torch.Tensor]]:
    """One call of the model's fused head (every field TRL offers; the first 3 labels ignored)
    and the gradients of a loss that trains on log-probs and entropy."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    outputs = ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1")
    trl_utils.add_fused_lm_head(model, temperature=0.8, outputs=outputs)
    ids = torch.randint(0, model.config.vocab_size, (2, 9))
    labels = ids.clone()
    labels[:, :3] = -100
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
    (out.loss + 0.1 * out.entropy.sum()).backward()
    return out, {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    ("autocast", "tolerance"),
    # bfloat16: both heads round their products to bfloat16 (8 bits), in other orders, and the
    # backbone's backward carries that: a few bfloat16 steps apart, a wrong formula far more
    [(False, {"rtol": 1e-5, "atol": 1e-6}), (True, {"rtol": 3e-2, "atol": 1e-2})],
    ids=["float32", "bfloat16-autocast"],
)
def test_trls_head_on_gems_computes_what_trls_own_does(
    tiny_model: Path, seam: None, autocast: bool, tolerance: dict[str, float]
) -> None:
    expected, expected_grads = _head_step(tiny_model, autocast)
    gems_model.use_gems_head()
    assert trl_utils._ChunkedLogProbFunction is gems_model.GemsLogProbHead
    actual, grads = _head_step(tiny_model, autocast)
    fields = ("loss", "log_probs", "entropy", "log_sum_sq_probs", "mean_logits")
    for field in fields:
        torch.testing.assert_close(
            getattr(actual, field), getattr(expected, field), **tolerance, msg=field
        )
    if not autocast:  # bfloat16 rounding may reorder near-equal logits
        assert torch.equal(actual.is_top1, expected.is_top1)
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():  # each relative to the gradient's largest magnitude
        scale = float(expected_grads[name].abs().max())
        error = float((grad - expected_grads[name]).abs().max()) / scale
        assert error <= tolerance["rtol"], (name, error)


def test_the_gems_head_refuses_what_it_does_not_compute(seam: None) -> None:
    hidden, weight, targets = torch.randn(3, 4), torch.randn(7, 4), torch.tensor([0, 6, 2])
    with pytest.raises(NotImplementedError, match=r"final_logit_softcapping=30\.0"):
        gems_model.GemsLogProbHead.apply(hidden, weight, None, targets, 1.0, 64, 30.0)
    with pytest.raises(ValueError, match=r"outputs expected among .*, got \['top5'\]"):
        gems_model.GemsLogProbHead.apply(hidden, weight, None, targets, 1.0, 64, None, 1.0,
                                         ("log_probs", "top5"))  # fmt: skip


def test_a_trl_without_the_seam_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(trl_utils, "_ChunkedLogProbFunction")
    with pytest.raises(RuntimeError, match=r"no trl\.trainer\.utils\._ChunkedLogProbFunction"):
        gems_model.use_gems_head()


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each thing's colour preferred over the next thing's."""
    things, colors = list(COLORS), list(COLORS.values())
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    records = [
        {"prompt": f"what is the color of the {thing}", "chosen": color, "rejected": other}
        for thing, color, other in zip(things, colors, colors[1:] + colors[:1], strict=True)
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


# What each method asks of TRL's head (the policy's fields; DPO's reference: log-probs only).
HEADS = {"sft": ["(log_probs, entropy, is_top1)"], "dpo": [
    "(log_probs, entropy, mean_logits, is_top1)", "(log_probs)"
]}  # fmt: skip


@pytest.mark.e2e
@pytest.mark.parametrize("method", ["sft", "dpo"])
def test_a_fine_tune_on_gems_kernels_matches_the_plain_one(
    client: TrainerClient, tiny_model: Path, chat_file: Path, pairs_file: Path, method: str
) -> None:
    data, metrics = (
        (chat_file, ["loss"]) if method == "sft" else (pairs_file, ["loss", "reward_margin"])
    )
    logged = {}
    for gems in (False, True):
        config = TRLConfig(
            method=DPO() if method == "dpo" else None,
            max_steps=STEPS,
            batch_size=2,
            learning_rate=2e-3,
            seed=7,
            gems_kernels=gems,
        )
        name, _ = run_to_completion(client, config, tiny_model, data)
        logs = "\n".join(client.get_job_logs(name))
        assert ("model patched with gems kernels" in logs) is gems
        # the training loss (and what is logged beside it) comes from TRL's head: gems' here
        for fields in HEADS[method]:
            line = f"loss: TRL's LM head computed by gems' fused.linear_log_probs {fields}"
            assert (line in logs) is gems, logs[-3000:]
        points = [p.values for p in client.get_job_metrics(name) if "loss" in p.values]
        logged[gems] = {metric: [p[metric] for p in points] for metric in metrics}
    for metric in metrics:
        assert len(logged[True][metric]) == STEPS, logged
        for patched, plain in zip(logged[True][metric], logged[False][metric], strict=True):
            assert math.isclose(patched, plain, rel_tol=1e-4, abs_tol=1e-6), (metric, logged)
