"""The op-by-op replay of a bf16 step: its error measures, and recording and replaying calls."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

_ULP = 2.0**-7  # bfloat16's spacing in [1, 2)


def test_errors_of_a_correctly_rounded_result(bench: SimpleNamespace) -> None:
    exact = torch.tensor([1 + 0.75 * _ULP], dtype=torch.float64)  # nearest bf16: 1 + ulp
    error = bench.op_errors.errors(torch.tensor([1 + _ULP], dtype=torch.bfloat16), exact)
    assert (error.ulps, error.misrounded) == (0.25, 0.0)
    assert error.relative == pytest.approx(0.25 * _ULP / (1 + 0.75 * _ULP))


def test_errors_of_a_truncated_result(bench: SimpleNamespace) -> None:
    exact = torch.tensor([1 + 0.75 * _ULP, 2.0], dtype=torch.float64)
    error = bench.op_errors.errors(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), exact)
    assert (error.ulps, error.misrounded) == (0.375, 0.5)


def test_a_cancellation_to_zero_counts_at_the_tensors_scale(bench: SimpleNamespace) -> None:
    """An exact zero missed by 2^-30 next to a 4.0: half an ulp at 2^-24 of 4, not 2^96 ulps."""
    exact = torch.tensor([4.0, 0.0], dtype=torch.float64)
    error = bench.op_errors.errors(torch.tensor([4.0, 2.0**-30], dtype=torch.bfloat16), exact)
    assert error.ulps == 0.25
    assert error.misrounded == 0.5


def test_recorder_keeps_inputs_as_they_were_before_an_in_place_op(bench: SimpleNamespace) -> None:
    x = torch.ones(3, dtype=torch.bfloat16)
    recorder = bench.op_errors.Recorder()
    with recorder:
        x.add_(1)
        x.float()  # no bf16 output: not recorded
    (call,) = recorder.calls
    assert call.site == "add_.Tensor#1"
    assert torch.equal(call.args[0], torch.ones(3, dtype=torch.bfloat16))


def test_replay_judges_gems_and_aten_on_the_same_inputs(bench: SimpleNamespace) -> None:
    """A bf16 linear layer's addmm: gems accumulates in float32 and rounds once, so every
    element is the float64 result's nearest bf16."""
    layer = torch.nn.Linear(24, 5).to(torch.bfloat16)
    recorder = bench.op_errors.Recorder()
    with recorder, torch.no_grad():
        layer(torch.randn(7, 24, dtype=torch.bfloat16))
    (call,) = [c for c in recorder.calls if c.site == "addmm.default#1"]
    ((index, shape, on_gems, _),) = bench.op_errors.replay(call)  # ATen's: information only
    assert (index, shape) == (0, (7, 5))
    assert on_gems.misrounded == 0.0
    assert on_gems.ulps <= 0.5
