"""matrix_exp, an ATen kernel whose Padé products and scaling run on gems kernels under
``use_gems()``, judged against float64 (issue 39 reported its gradient no longer close to ATen's;
measured against float64, gems' error is ATen's: see the package README)."""

from __future__ import annotations

import gems_kernels
import torch


def _relative_error(got: torch.Tensor, reference: torch.Tensor) -> float:
    """The largest error of each matrix relative to that matrix's largest magnitude."""
    scale = reference.abs().amax(dim=(-2, -1), keepdim=True)
    return float(((got.double() - reference) / scale).abs().max())


def test_forward_and_gradient_against_float64() -> None:
    """OpInfo's inputs (entries uniform in [-9, 9], so 1-norms near 27 and results up to 1e5):
    the float32 result and gradient within 1e-5 of float64, relative to each matrix."""
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(3, 5, 5, generator=generator) * 18 - 9
    grad = torch.randn(3, 5, 5, generator=generator)

    def run(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = inputs.detach().requires_grad_()
        out = torch.matrix_exp(inputs)
        (gradient,) = torch.autograd.grad(out, inputs, grad.to(inputs.dtype))
        return out.detach(), gradient

    out64, gradient64 = run(x.double())
    with gems_kernels.use_gems(record=True) as session:
        out, gradient = run(x)
    assert session.recorder is not None
    assert "bmm.out" in session.recorder.seen, "the Padé products did not reach gems"
    assert _relative_error(out, out64) <= 1e-5
    assert _relative_error(gradient, gradient64) <= 1e-5
