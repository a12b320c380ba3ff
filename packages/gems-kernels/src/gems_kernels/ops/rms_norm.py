"""RMS normalisation over the trailing dims, with its own backward.

``aten::rms_norm`` is a composite that ATen decomposes above the backend key, so it registers at
the autograd key and records its backward through :class:`RmsNorm`. The kernels are the
non-centring mode of those in ``ops/layer_norm.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import torch

from gems_kernels import autograd, host
from gems_kernels.ops.layer_norm import normalize_rows, normalize_rows_backward
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration

__all__ = ["REGISTRATIONS", "RmsNorm", "rms_norm", "rms_norm_backward", "rms_norm_forward"]


def _eps(x: torch.Tensor, eps: float | None) -> float:
    return torch.finfo(x.dtype).eps if eps is None else eps


def rms_norm_forward(
    x: torch.Tensor, row_size: int, weight: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd): y = x / rms(x) * weight over rows of ``row_size``; rstd is flat float32."""
    y, _, rstd = normalize_rows(x, row_size, weight, None, eps, center=False)
    return y, rstd


def rms_norm_backward(
    grad_y: torch.Tensor,
    x: torch.Tensor,
    row_size: int,
    weight: torch.Tensor | None,
    rstd: torch.Tensor,
    needs: tuple[bool, bool] = (True, True),
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(grad_x, grad_weight) for :func:`rms_norm_forward`."""
    grad_x, grad_weight, _ = normalize_rows_backward(
        grad_y, x, row_size, weight, None, rstd,
        grad_input=needs[0], grad_parameters=(needs[1] and weight is not None, False),
    )  # fmt: skip
    return grad_x, grad_weight


class RmsNorm(torch.autograd.Function):
    """Saves x, weight and rstd; the backward runs the Triton backward kernels."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor | None, row_size: int,
                eps: float) -> torch.Tensor:  # fmt: skip
        y, rstd = rms_norm_forward(x, row_size, weight, eps)
        ctx.save_for_backward(x, weight, rstd)
        ctx.row_size = row_size
        return y.view(x.shape)

    @staticmethod
    @host.host_code
    def backward(ctx: Any, grad_y: torch.Tensor) -> tuple[Any, ...]:
        x, weight, rstd = ctx.saved_tensors
        grad_x, grad_weight = rms_norm_backward(
            grad_y, x, ctx.row_size, weight, rstd, needs=ctx.needs_input_grad[:2]
        )
        if grad_weight is not None and weight is not None:
            grad_weight = grad_weight.to(weight.dtype).view(weight.shape)
        return (grad_x.view(x.shape) if grad_x is not None else None), grad_weight, None, None


def rms_norm(
    x: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None = None,
    eps: float | None = None,
) -> torch.Tensor:
    """aten::rms_norm (``eps=None`` means the dtype's machine epsilon, as in ATen)."""
    if tuple(x.shape[x.dim() - len(normalized_shape) :]) != tuple(normalized_shape):
        raise RuntimeError(
            f"normalized_shape: {list(normalized_shape)} does not match the trailing dims of "
            f"input of shape {list(x.shape)}"
        )
    return autograd.apply(RmsNorm, x, weight, math.prod(normalized_shape), _eps(x, eps))


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("rms_norm", rms_norm, autograd=True, condition=is_floating_input),
)
