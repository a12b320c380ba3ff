"""mse_loss and its backward: a squared-difference kernel and a gems reduction."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl  # noqa: F401  (the interpreter needs it)

from gems_kernels.ops import reductions
from gems_kernels.ops.registering import Registration, all_floating
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["REGISTRATIONS", "mse_loss", "mse_loss_backward"]

_NONE, _MEAN, _SUM = 0, 1, 2


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _squared_difference(x, y):
    difference = x - y
    return difference * difference


@pointwise_dynamic(is_tensor=[True, True, True, False], promotions=[((0, 1, 2), "DEFAULT")])
@triton.jit
def _mse_grad(grad, x, y, scale):
    return scale * (x - y) * grad


def mse_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = _MEAN) -> torch.Tensor:
    """aten::mse_loss: (self - target)^2, averaged, summed or per element."""
    squared = _squared_difference(self, target)
    if reduction == _NONE:
        return squared
    if reduction == _SUM:
        return reductions.sum(squared)
    return reductions.mean(squared)


def mse_loss_backward(
    grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor, reduction: int
) -> torch.Tensor:
    """aten::mse_loss_backward: 2 (self - target) grad, divided by the count for the mean."""
    scale: Any = 2.0 / self.numel() if reduction == _MEAN and self.numel() else 2.0
    return _mse_grad(grad_output, self, target, scale)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("mse_loss", mse_loss, condition=all_floating),
    Registration("mse_loss_backward", mse_loss_backward, condition=all_floating),
)
