"""max.dim / min.dim / argmax / argmin: exact indices, first index on ties, NaN wins; integer
inputs exact at any magnitude."""

from __future__ import annotations

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy, ops

SHAPES = [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 5), 1), ((3, 1100), 1)]


@pytest.mark.parametrize(("shape", "dim", "dtype"), accuracy.dtype_variants(SHAPES))
@pytest.mark.parametrize("name", ["max", "min"])
def test_values_and_indices(
    name: str, shape: tuple[int, ...], dim: int, dtype: torch.dtype
) -> None:
    # Few distinct values: ties are common and must resolve to the first index.
    x = accuracy.make_tensor(shape, torch.int64, low=-3, high=3).to(dtype)
    fn = getattr(torch, name)
    accuracy.check_op(lambda t: tuple(fn(t, dim, keepdim=True)), x, overloads=[f"{name}.dim"])
    accuracy.check_op(lambda t: getattr(torch, f"arg{name}")(t, dim), x, overloads=[f"arg{name}"])


def test_argmax_of_flattened_and_strided() -> None:
    x = accuracy.non_contiguous(accuracy.make_tensor((5, 6), torch.float32))
    accuracy.check_op(torch.argmax, x, overloads=["argmax"])
    accuracy.check_op(lambda t: torch.argmin(t, keepdim=True), x, overloads=["argmin"])


def test_nan_is_the_maximum_and_the_minimum() -> None:
    x = torch.tensor([[1.0, float("nan"), 5.0, float("nan")], [2.0, 1.0, -1.0, 2.0]])
    values, indices = ops.max_dim(x, 1)
    assert indices.tolist() == [1, 0]
    assert values[0].isnan() and values[1] == 2.0
    assert ops.argmin(x, 1).tolist() == [1, 2]


def test_empty_dim_is_an_error() -> None:
    with pytest.raises(IndexError, match="argmax: expected reduction dim"):
        ops.argmax(torch.empty(3, 0), 1)


INTEGERS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("name", ["max", "min"])
def test_integers_exactly_at_their_extremes(name: str, dtype: torch.dtype) -> None:
    """Integer rows (CLIP pools its text at argmax(input_ids == eos)) compared as int64: the
    dtype's extremes on ties, and int64 neighbours a float32 key could not tell apart."""
    info = torch.iinfo(dtype)
    x = accuracy.make_tensor((3, 37), dtype, low=max(info.min, -100), high=min(info.max, 100))
    x[0, [5, 9]] = info.max
    x[1, [3, 30]] = info.min
    if dtype == torch.int64:
        x[2] = 2**53 + 1
        x[2, 20] = 2**53 + (2 if name == "max" else 0)
    fn = getattr(torch, name)
    accuracy.check_op(lambda t: tuple(fn(t, 1)), x, overloads=[f"{name}.dim"])
    accuracy.check_op(lambda t: getattr(torch, f"arg{name}")(t, 1), x, overloads=[f"arg{name}"])
    accuracy.check_op(lambda t: getattr(torch, f"arg{name}")(t.t(), 0), x, overloads=[f"arg{name}"])
    accuracy.check_op(lambda t: getattr(torch, f"arg{name}")(t), x, overloads=[f"arg{name}"])


def test_bool_and_float64_stay_in_aten() -> None:
    for x in (
        torch.tensor([False, True, True]),
        torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64),
    ):
        with gems_kernels.use_gems(include=["max"], record=True) as session:
            values, indices = torch.max(x, 0)
        assert session.recorder is not None and not session.recorder.seen
        assert int(indices) == 1 and values == x[1]
