"""scaled_dot_product_attention's float32 gradients against float64 where the scores are large
and rows nearly one-hot (issue 39: on OpInfo's sample 4 gems' query and key gradients were
1.5e-5 to 2.5e-5 from float64, ATen's math path's 2.5e-6 to 8e-6)."""

from __future__ import annotations

import gems_kernels
import numpy as np
import pytest
import torch
import torch.nn.functional as F

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _gradients(inputs: Inputs, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = F.scaled_dot_product_attention(*leaves)
    return torch.autograd.grad(out, leaves, grad.to(out.dtype))


def _error(got: torch.Tensor, reference: torch.Tensor) -> float:
    """The largest error relative to the reference's largest magnitude (as opinfo_grads.py)."""
    return float((got.double() - reference).abs().max() / reference.abs().max())


def _errors(inputs: Inputs, grad: torch.Tensor) -> list[tuple[str, float, float]]:
    """(input name, gems' error, ATen's error) of each float32 gradient against float64."""
    q, k, v = inputs
    reference = _gradients((q.double(), k.double(), v.double()), grad.double())
    aten = _gradients(inputs, grad)
    with gems_kernels.use_gems():
        gems = _gradients(inputs, grad)
    return [
        (name, _error(got, exact), _error(on_aten, exact))
        for name, got, on_aten, exact in zip("qkv", gems, aten, reference, strict=True)
    ]


def _opinfo_sample_4() -> Inputs:
    """OpInfo's sample 4 of scaled_dot_product_attention (3-D q (4, 3, 8), k and v (4, 6, 8),
    entries uniform in [-9, 9], scores up to about 81), drawn as opinfo_grads.py draws it."""
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "nn.functional.scaled_dot_product_attention")
    torch.manual_seed(0)
    sample = list(op.sample_inputs("cpu", torch.float32))[4]
    assert not sample.kwargs["is_causal"] and sample.kwargs["dropout_p"] == 0.0
    return sample.input, sample.args[0], sample.args[1]


@pytest.mark.parametrize("seed", range(3))
def test_opinfo_sample_4_within_1e_5(seed: int) -> None:
    """Each gradient within 1e-5 of float64 and at most 1.5x ATen's error (the cotangents
    drawn as opinfo_grads.py draws them)."""
    inputs = _opinfo_sample_4()
    grad = torch.from_numpy(np.random.default_rng(seed).standard_normal((4, 3, 8))).float()
    for name, error, aten_error in _errors(inputs, grad):
        assert error <= 1e-5, f"grad {name}: {error:.2e} from float64 (ATen {aten_error:.2e})"
        assert error <= 1.5 * aten_error, f"grad {name}: {error:.2e}, ATen {aten_error:.2e}"


@pytest.mark.parametrize("seed", [14, 20, 78])
def test_as_close_as_aten_where_rounded_scores_dominate(seed: int) -> None:
    """Draws of the same kind where the float32 scores' own rounding puts ATen's query or key
    gradient past 1e-5 too: gems' query and key gradients at most 1.5x ATen's error (they were
    2.2x to 5.2x; the value gradients, near float32's rounding on both, are left to the test
    above)."""
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.rand(4, n, 8, generator=generator) * 18 - 9 for n in (3, 6, 6))
    grad = torch.randn(4, 3, 8, generator=generator)
    for name, error, aten_error in _errors((q, k, v), grad)[:2]:
        assert error <= 1.5 * aten_error, f"grad {name}: {error:.2e}, ATen {aten_error:.2e}"
