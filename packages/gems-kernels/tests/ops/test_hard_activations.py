"""hardswish, hardsigmoid, hardtanh (ReLU6) and their backward ops against float64 ATen."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

aten = torch.ops.aten
FORWARD = [
    pytest.param("hardswish", F.hardswish, id="hardswish"),
    pytest.param("hardsigmoid", F.hardsigmoid, id="hardsigmoid"),
    pytest.param("hardtanh", F.relu6, id="relu6"),
    pytest.param("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), id="hardtanh"),
    pytest.param("hardswish_", lambda x: F.hardswish(x.clone(), inplace=True), id="hardswish_"),
    pytest.param("hardtanh_", lambda x: F.relu6(x.clone(), inplace=True), id="relu6_"),
    pytest.param("hardsigmoid_", lambda x: aten.hardsigmoid_(x.clone()), id="hardsigmoid_"),
]
BACKWARD = [
    pytest.param("hardswish_backward", aten.hardswish_backward, id="hardswish"),
    pytest.param("hardsigmoid_backward", aten.hardsigmoid_backward, id="hardsigmoid"),
    pytest.param(
        "hardtanh_backward", lambda g, x: aten.hardtanh_backward(g, x, 0.0, 6.0), id="relu6"
    ),
]
# The boundaries of each piece, where ATen's < and <= decide, NaN and infinities.
_EDGES = [-torch.inf, -6.0, -3.0, -0.5, 0.0, 2.0, 3.0, 6.0, torch.inf, torch.nan]


def _inputs(
    shape: tuple[int, ...], dtype: torch.dtype, edges_list: list[float] = _EDGES
) -> torch.Tensor:
    x = accuracy.make_tensor(shape, dtype, low=-7.0, high=7.0)
    edges = torch.tensor(edges_list, dtype=dtype, device=x.device)
    flat = x.reshape(-1)
    count = min(flat.numel(), edges.numel())
    flat[:count] = edges[:count]
    return x


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
@pytest.mark.parametrize(("overload", "fn"), FORWARD)
def test_forward(
    overload: str,
    fn: Callable[..., torch.Tensor],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
) -> None:
    x = accuracy.arrange(_inputs(shape, dtype), layout)
    accuracy.check_op(fn, x, overloads=[overload])


@pytest.mark.parametrize(("shape", "dtype"), accuracy.dtype_variants([((13,),), ((2, 3, 5),)]))
@pytest.mark.parametrize(("overload", "fn"), BACKWARD)
def test_backward(
    overload: str, fn: Callable[..., torch.Tensor], shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    """Without NaN inputs: ATen's scalar and vectorised CPU loops disagree on hardswish's."""
    grad = accuracy.make_tensor(shape, dtype)
    accuracy.check_op(fn, grad, _inputs(shape, dtype, _EDGES[:-1]), overloads=[overload])


def test_hardswish_gradient_of_nan_is_nan() -> None:
    from gems_kernels import use_gems

    x = torch.tensor([torch.nan, -3.0, 3.0, 1.5])
    with use_gems(include=["hardswish_backward"]):
        grad = aten.hardswish_backward(torch.ones(4), x)
    assert grad.isnan().tolist() == [True, False, False, False]
    assert grad[1:].tolist() == [0.0, 1.0, 1.0]


def test_relu6_gradient_through_autograd() -> None:
    x = _inputs((4, 7), torch.float32, _EDGES[:-1])
    grad = accuracy.make_tensor((4, 7), torch.float32)
    accuracy.check_op(
        accuracy.with_gradients(F.relu6), x, grad, overloads=["hardtanh", "hardtanh_backward"]
    )


def test_integer_hardtanh_falls_through_to_aten() -> None:
    x = torch.arange(-5, 9)
    from gems_kernels import use_gems

    with use_gems(include=["hardtanh"], record=True) as session:
        y = F.hardtanh(x, 0, 6)
    assert session.recorder is not None and "hardtanh" not in session.recorder.seen
    assert y.dtype == torch.int64 and y.tolist() == x.clamp(0, 6).tolist()
