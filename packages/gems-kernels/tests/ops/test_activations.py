"""Activations and their backward ops, forward values and gradients against ATen."""

from __future__ import annotations

from collections.abc import Callable

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

FORWARD = [
    pytest.param(["relu"], torch.relu, id="relu"),
    pytest.param(["gelu"], F.gelu, id="gelu"),
    pytest.param(["gelu"], lambda x: F.gelu(x, approximate="tanh"), id="gelu-tanh"),
    pytest.param(["silu"], F.silu, id="silu"),
    pytest.param(["leaky_relu"], lambda x: F.leaky_relu(x, 0.2), id="leaky_relu"),
    pytest.param(["relu_"], torch.relu_, id="relu_"),
    pytest.param(["gelu_"], lambda x: torch.ops.aten.gelu_(x), id="gelu_"),
]
aten = torch.ops.aten
BACKWARD = [
    pytest.param("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 0), id="relu"),
    pytest.param("gelu_backward", aten.gelu_backward, id="gelu"),
    pytest.param(
        "gelu_backward", lambda g, x: aten.gelu_backward(g, x, approximate="tanh"), id="gelu-tanh"
    ),
    pytest.param("sigmoid_backward", aten.sigmoid_backward, id="sigmoid"),
    pytest.param("tanh_backward", aten.tanh_backward, id="tanh"),
    pytest.param(
        "leaky_relu_backward",
        lambda g, x: aten.leaky_relu_backward(g, x, 0.2, False),
        id="leaky_relu",
    ),
]


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
@pytest.mark.parametrize(("overloads", "fn"), FORWARD)
def test_forward(
    overloads: list[str],
    fn: Callable[..., torch.Tensor],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    accuracy.check_op(fn, x, overloads=overloads)


@pytest.mark.parametrize(
    ("shape", "dtype"), accuracy.dtype_variants([((1,),), ((3, 5),), ((2, 3, 4),)])
)
@pytest.mark.parametrize(("overload", "fn"), BACKWARD)
def test_backward(
    overload: str, fn: Callable[..., torch.Tensor], shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    """The backward op itself, on saved values of the test dtype (as autograd passes them)."""
    grad, x = accuracy.make_tensor(shape, dtype), accuracy.make_tensor(shape, dtype)
    if overload in ("sigmoid_backward", "tanh_backward"):
        # Their second argument is the forward's output, saved in the test dtype.
        x = x.sigmoid() if overload == "sigmoid_backward" else x.tanh()
    accuracy.check_op(fn, grad, x, overloads=[overload])


def test_autograd_uses_the_backward_kernels() -> None:
    x = accuracy.make_tensor((5, 7), torch.float32)

    def gradient(t: torch.Tensor) -> torch.Tensor:
        leaf = t.detach().requires_grad_()
        (result,) = torch.autograd.grad(F.gelu(torch.tanh(leaf)).sum(), leaf)
        return result

    accuracy.check_op(gradient, x, overloads=["gelu_backward", "tanh_backward"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_silu_backward_called_directly(dtype: torch.dtype) -> None:
    """``gems_kernels.ops.silu_backward`` is exposed but not in the registration table."""
    grad, x = accuracy.make_tensor((3, 5), dtype), accuracy.make_tensor((3, 5), dtype)
    accuracy.check_fused(gems_kernels.ops.silu_backward, aten.silu_backward, grad, x)
