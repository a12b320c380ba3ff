"""Under Triton's interpreter the kernels evaluate masked-off lanes too; they must not raise NumPy
floating-point warnings there (issue 27: a model step printed 'invalid value encountered in
subtract' and the like). Warnings are errors in these tests."""

from __future__ import annotations

import warnings

import gems_kernels
import pytest
import torch
from gems_kernels import llama_step
from gems_kernels.accuracy import assert_close, reference_call


@pytest.mark.parametrize(
    ("fused", "autocast"), [(False, False), (True, True)], ids=["foreach-fp32", "fused-bf16"]
)
def test_a_model_step_raises_no_numpy_warning(fused: bool, autocast: bool) -> None:
    step = llama_step.LlamaStep(llama_step.LlamaConfig(), fused=fused, autocast=autocast)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with gems_kernels.use_gems():
            loss = step.step()
    assert torch.isfinite(loss)


def test_softmax_of_masked_scores_and_division_of_odd_sizes_are_clean() -> None:
    """Rows of 5 (3 masked-off lanes in a block of 8) with -inf scores, as a masked attention
    row has them, and a pointwise division whose block is wider than the tensor."""
    scores = torch.randn(3, 5)
    scores[:, 3:] = float("-inf")
    x, y = torch.randn(7), torch.rand(7) + 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with gems_kernels.use_gems():
            soft = torch.softmax(scores, dim=-1)
            log_soft = torch.log_softmax(scores, dim=-1)
            quotient = x / y
    assert_close(soft, reference_call(torch.softmax, scores, dim=-1))
    assert_close(log_soft, reference_call(torch.log_softmax, scores, dim=-1))
    assert_close(quotient, reference_call(torch.div, x, y))
