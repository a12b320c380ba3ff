"""``_fused_adam_`` and ``_fused_adamw_``: one pointwise kernel per parameter updates the
parameter and both moments in place.

The step count, the gradient scale and the found-inf flag stay on the device as 0-d operands of
the kernel (no host synchronisation): the bias corrections are computed in the kernel, and a
nonzero found-inf leaves every tensor unchanged, as ATen's fused kernels do. ``amsgrad`` is not
implemented (the condition sends it to ATen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["REGISTRATIONS", "fused_adam_", "fused_adamw_", "is_plain_fused_adam"]


@pointwise_dynamic(
    is_tensor=[
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    promotions=[((0,), "NO_OPMATH"), ((2,), "NO_OPMATH"), ((3,), "NO_OPMATH")],
)
@triton.jit
def _adam_update(param, grad, exp_avg, exp_avg_sq, step, grad_scale, found_inf,
                 lr, beta1, beta2, weight_decay, eps, maximize, decoupled):  # fmt: skip
    p = param.to(tl.float32)
    g = grad.to(tl.float32) / grad_scale.to(tl.float32)
    g = tl.where(maximize != 0, -g, g)
    m = exp_avg.to(tl.float32)
    v = exp_avg_sq.to(tl.float32)
    if decoupled:
        p = p * (1.0 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    m = m + (1.0 - beta1) * (g - m)
    v = beta2 * v + (1.0 - beta2) * g * g
    steps = step.to(tl.float32)
    bias_correction1 = 1.0 - tl.exp(steps * tl.log(beta1 + 0.0 * steps))
    bias_correction2 = 1.0 - tl.exp(steps * tl.log(beta2 + 0.0 * steps))
    denominator = tl.sqrt(v) / tl.sqrt(bias_correction2) + eps
    p = p - (lr / bias_correction1) * m / denominator
    skip = found_inf.to(tl.float32) != 0
    return (
        tl.where(skip, param.to(tl.float32), p),
        tl.where(skip, exp_avg.to(tl.float32), m),
        tl.where(skip, exp_avg_sq.to(tl.float32), v),
    )


def is_plain_fused_adam(
    self: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    max_exp_avg_sqs: Sequence[torch.Tensor],
    state_steps: Sequence[torch.Tensor],
    *args: Any,
    **kwargs: Any,
) -> bool:
    """Condition: no amsgrad, a float lr, floating parameters on one device."""
    lr = kwargs.get("lr", args[0] if args else None)
    tensors = [*self, *grads, *exp_avgs, *exp_avg_sqs]
    return (
        not kwargs.get("amsgrad", False)
        and not isinstance(lr, torch.Tensor)
        and all(t.is_floating_point() for t in tensors)
        and len({t.device for t in tensors}) <= 1
    )


def _fused(
    decoupled: bool,
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    state_steps: Sequence[torch.Tensor],
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
    grad_scale: torch.Tensor | None,
    found_inf: torch.Tensor | None,
) -> None:
    scale: Any = 1.0 if grad_scale is None else grad_scale
    inf: Any = 0.0 if found_inf is None else found_inf
    for param, grad, exp_avg, exp_avg_sq, step in zip(
        params, grads, exp_avgs, exp_avg_sqs, state_steps, strict=True
    ):
        _adam_update(
            param, grad, exp_avg, exp_avg_sq, step, scale, inf,
            float(lr), float(beta1), float(beta2), float(weight_decay), float(eps),
            int(maximize), decoupled,
            out0=param, out1=exp_avg, out2=exp_avg_sq,
        )  # fmt: skip


def fused_adam_(
    self: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    max_exp_avg_sqs: Sequence[torch.Tensor],
    state_steps: Sequence[torch.Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> None:
    """aten::_fused_adam_ (L2 weight decay added to the gradient)."""
    _fused(False, self, grads, exp_avgs, exp_avg_sqs, state_steps, lr, beta1, beta2,
           weight_decay, eps, maximize, grad_scale, found_inf)  # fmt: skip


def fused_adamw_(
    self: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    exp_avgs: Sequence[torch.Tensor],
    exp_avg_sqs: Sequence[torch.Tensor],
    max_exp_avg_sqs: Sequence[torch.Tensor],
    state_steps: Sequence[torch.Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> None:
    """aten::_fused_adamw_ (decoupled weight decay)."""
    _fused(True, self, grads, exp_avgs, exp_avg_sqs, state_steps, lr, beta1, beta2,
           weight_decay, eps, maximize, grad_scale, found_inf)  # fmt: skip


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("_fused_adam_", fused_adam_, condition=is_plain_fused_adam),
    Registration("_fused_adamw_", fused_adamw_, condition=is_plain_fused_adam),
)
