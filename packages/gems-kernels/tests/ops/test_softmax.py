"""softmax / log_softmax forward and backward along every dim, long rows across blocks."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

aten = torch.ops.aten
CASES = [((), 0), ((1,), 0), ((37,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 5), 1), ((2, 1500), -1)]


@pytest.mark.parametrize(("shape", "dim", "dtype"), accuracy.dtype_variants(CASES))
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_forward(shape: tuple[int, ...], dim: int, log: bool, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    fn = torch.log_softmax if log else torch.softmax
    overload = "_log_softmax" if log else "_softmax"
    accuracy.check_op(lambda t: fn(t, dim), x, overloads=[overload])


@pytest.mark.parametrize(("shape", "dim", "dtype"), accuracy.dtype_variants(CASES[1:]))
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_backward(shape: tuple[int, ...], dim: int, log: bool, dtype: torch.dtype) -> None:
    grad = accuracy.make_tensor(shape, dtype)
    x = accuracy.make_tensor(shape, dtype)
    if log:
        out = torch.log_softmax(x, dim)
        fn, overload = aten._log_softmax_backward_data, "_log_softmax_backward_data"
    else:
        out = torch.softmax(x, dim)
        fn, overload = aten._softmax_backward_data, "_softmax_backward_data"
    accuracy.check_op(
        lambda g, o: fn(g, o, dim, dtype), grad, out, overloads=[overload], reduce_size=shape[dim]
    )


def test_half_to_float_and_masked_rows() -> None:
    from gems_kernels import ops

    x = accuracy.make_tensor((3, 8), torch.float16)
    # ATen's CPU kernel refuses half_to_float, so compare the direct call with the reference.
    result = ops.softmax(x, 1, True)
    assert result.dtype == torch.float32
    accuracy.assert_close(result, torch.softmax(accuracy.to_reference(x), 1))
    masked = torch.zeros(2, 5)
    masked[0, :3] = float("-inf")
    accuracy.check_op(lambda t: torch.softmax(t, 1), masked, overloads=["_softmax"])


def test_strided_input_and_autograd() -> None:
    x = accuracy.non_contiguous(accuracy.make_tensor((5, 12), torch.float32))

    def gradient(t: torch.Tensor) -> torch.Tensor:
        leaf = t.detach().requires_grad_()
        weights = torch.linspace(-1, 1, 12)
        (torch.log_softmax(leaf, 1) * weights).sum().backward()
        return leaf.grad

    accuracy.check_op(
        gradient, x, overloads=["_log_softmax", "_log_softmax_backward_data"], reduce_size=12
    )
