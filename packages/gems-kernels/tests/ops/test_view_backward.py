"""select_backward, slice_backward, scalar_tensor and ``.bool()`` on gems kernels."""

from __future__ import annotations

from collections.abc import Callable

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy

aten = torch.ops.aten
GRADIENTS = [
    pytest.param("select_backward", lambda x: x[:, 0], id="cls-token"),
    pytest.param("select_backward", lambda x: x.select(-1, -2), id="select-negative"),
    pytest.param("slice_backward", lambda x: x[:, 1:], id="patch-tokens"),
    pytest.param("slice_backward", lambda x: x[..., -3::2], id="slice-step"),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("overload", "view"), GRADIENTS)
def test_view_gradients(
    overload: str, view: Callable[[torch.Tensor], torch.Tensor], dtype: torch.dtype
) -> None:
    x = accuracy.make_tensor((2, 5, 4), dtype)
    grad = accuracy.make_tensor(view(x).shape, dtype)
    accuracy.check_op(accuracy.with_gradients(view), x, grad, overloads=[overload])


def test_backward_ops_called_directly() -> None:
    grad = accuracy.make_tensor((3, 2), torch.float32)
    with gems_kernels.use_gems(include=["select_backward", "slice_backward"]):
        selected = aten.select_backward(grad, [3, 4, 2], 1, -1)
        sliced = aten.slice_backward(grad, [3, 7], 1, 4, 2**63 - 1, 2)
    expected = torch.zeros(3, 4, 2)
    expected[:, -1] = grad
    assert torch.equal(selected, expected)
    expected = torch.zeros(3, 7)
    expected[:, 4::2] = grad
    assert torch.equal(sliced, expected)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(3, None), (2.5, torch.float64), (-7, torch.int64), (True, torch.bool), (0.1, torch.bfloat16)],
)
def test_scalar_tensor(value: float, dtype: torch.dtype | None) -> None:
    with gems_kernels.use_gems(include=["scalar_tensor"], record=True) as session:
        got = torch.scalar_tensor(value, dtype=dtype)
    assert session.recorder is not None and session.recorder.seen == {"scalar_tensor"}
    expected = torch.scalar_tensor(value, dtype=dtype)
    assert got.dtype == expected.dtype and got.shape == () and torch.equal(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64])
def test_to_bool_is_not_equal_to_zero(dtype: torch.dtype) -> None:
    """The attention mask's ``.bool()``: 0.5 and NaN are True (a cast would truncate)."""
    values = [0.0, 0.5, -0.25, 1.0, -3.0] if dtype.is_floating_point else [0, 1, -2, 7, 0]
    x = torch.tensor(values, dtype=dtype)
    if dtype.is_floating_point:
        x = torch.cat([x, torch.tensor([-0.0, torch.nan, torch.inf], dtype=dtype)])
    with gems_kernels.use_gems(include=["_to_copy"], record=True) as session:
        got = x.bool()
        strided = x.view(1, -1).t().bool()
    assert session.recorder is not None and session.recorder.seen == {"_to_copy"}
    assert got.dtype == torch.bool and got.tolist() == x.bool().tolist()
    assert strided.tolist() == x.view(1, -1).t().bool().tolist()
