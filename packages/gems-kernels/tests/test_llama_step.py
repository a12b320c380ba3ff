"""A Llama-style training step runs on gems kernels only, and follows ATen for three steps."""

from __future__ import annotations

from pathlib import Path

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels.coverage import NativeOpTrace
from gems_kernels.llama_step import LlamaConfig, LlamaStep

FOREACH = pytest.param(False, False, id="adamw-foreach")
FUSED = pytest.param(True, False, id="adamw-fused")
FOREACH_AUTOCAST = pytest.param(False, True, id="adamw-foreach-bf16-autocast")
FUSED_AUTOCAST = pytest.param(True, True, id="adamw-fused-bf16-autocast")


@pytest.mark.parametrize(("fused", "autocast"), [FOREACH, FUSED_AUTOCAST])
def test_every_op_of_the_step_runs_on_gems(fused: bool, autocast: bool, recorded: Path) -> None:
    step = LlamaStep(LlamaConfig(), fused=fused, autocast=autocast)
    with gems_kernels.use_gems(record=True, record_path=recorded), NativeOpTrace() as trace:
        for _ in range(2):  # the second step has optimizer state: every path is taken
            step.step()
    assert dict(trace.native) == {}, f"ATen ops that ran natively: {dict(trace.native)}"
    assert dict(trace.host) == {}, f"ATen calls of gems host code: {dict(trace.host)}"
    assert trace.gems["mm.default"] and trace.gems["_foreach_norm.Scalar"]
    recorded_ops = set(recorded.read_text().split())
    assert {"rms_norm", "scaled_dot_product_attention", "cross_entropy_loss"} <= recorded_ops
    assert ("_fused_adamw_" in recorded_ops) == fused
    assert ("_amp_update_scale_" in recorded_ops) == autocast


@pytest.mark.parametrize(("fused", "autocast"), [FOREACH, FUSED, FOREACH_AUTOCAST])
def test_three_steps_match_aten(fused: bool, autocast: bool) -> None:
    native = LlamaStep(LlamaConfig(), fused=fused, autocast=autocast)
    gems = LlamaStep(LlamaConfig(), fused=fused, autocast=autocast)
    initial = [p.detach().clone() for p in native.model.parameters()]
    native_losses = [native.step() for _ in range(3)]
    with gems_kernels.use_gems():
        gems_losses = [gems.step() for _ in range(3)]
    loss_tolerance = {"rtol": 2e-3, "atol": 0.0} if autocast else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(
        torch.stack(gems_losses), torch.stack(native_losses), **loss_tolerance
    )
    named = zip(native.model.named_parameters(), gems.model.parameters(), initial, strict=True)
    for (name, expected), actual, start in named:
        if not autocast:
            torch.testing.assert_close(actual, expected, msg=name, rtol=1e-4, atol=1e-5)
            continue
        # In bfloat16, Adam turns the sign of a gradient near zero into a whole lr-sized step,
        # so a few percent of the elements differ by up to 3 * lr; the updates as a whole agree.
        similarity = F.cosine_similarity(
            (actual - start).flatten(), (expected - start).flatten(), 0
        )
        assert similarity > 0.99, (name, float(similarity))
    if autocast:
        assert gems.scaler is not None and native.scaler is not None
        assert gems.scaler.get_scale() == native.scaler.get_scale()
