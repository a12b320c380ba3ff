"""fill_, zero_ (and so zeros/ones/full), cat, stack, repeat, padding, roll and copy_ into bool
against ATen."""

from __future__ import annotations

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
def test_fill_and_zero(shape: tuple[int, ...], dtype: torch.dtype, layout: str) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    accuracy.check_op(lambda t: t.fill_(2.5), x, overloads=["fill_.Scalar"])
    accuracy.check_op(lambda t: t.fill_(torch.tensor(-1.5)), x, overloads=["fill_.Tensor"])
    accuracy.check_op(lambda t: t.zero_(), x, overloads=["zero_"])


def test_factories_fill_through_gems() -> None:
    accuracy.check_op(lambda: torch.full((3, 4), 7, dtype=torch.int32), overloads=["fill_.Scalar"])
    accuracy.check_op(lambda: torch.zeros(5, dtype=torch.bfloat16), overloads=["zero_"])


@pytest.mark.parametrize(
    ("shapes", "dim", "dtype"),
    accuracy.dtype_variants([
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], 1),
        ([(2, 3, 4), (2, 3, 4)], -1),
        ([(3,), (0,), (2,)], 0),
    ]),
)  # fmt: skip
def test_cat(shapes: list[tuple[int, ...]], dim: int, dtype: torch.dtype) -> None:
    tensors = [accuracy.make_tensor(shape, dtype) for shape in shapes]
    tensors[0] = accuracy.non_contiguous(tensors[0])
    accuracy.check_op(lambda *ts: torch.cat(ts, dim), *tensors, overloads=["cat"])


def test_cat_mismatched_sizes_name_the_dim() -> None:
    from gems_kernels import ops

    with pytest.raises(RuntimeError, match="except in dimension 0"):
        ops.cat([torch.ones(2, 3), torch.ones(2, 4)], 0)


@pytest.mark.parametrize(
    ("shape", "dim", "dtype"), accuracy.dtype_variants([((3,), 0), ((2, 4), 1), ((2, 3, 1), -1)])
)
def test_stack(shape: tuple[int, ...], dim: int, dtype: torch.dtype) -> None:
    tensors = [accuracy.make_tensor(shape, dtype) for _ in range(3)]
    accuracy.check_op(lambda *ts: torch.stack(ts, dim), *tensors, overloads=["stack"])


@pytest.mark.parametrize(
    ("shape", "repeats", "dtype"),
    accuracy.dtype_variants([((3,), (2,)), ((2, 3), (2, 1)), ((2, 3), (3, 1, 2)), ((), (4,))]),
)
def test_repeat(shape: tuple[int, ...], repeats: tuple[int, ...], dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    accuracy.check_op(lambda t: t.repeat(*repeats), x, overloads=["repeat"])


@pytest.mark.parametrize(
    ("shape", "pad", "dtype"),
    accuracy.dtype_variants([((4,), (1, 2)), ((2, 3), (0, 1, 2, 0)), ((2, 5), (-1, 2)),
                             ((1, 2, 3), (1, 1, 1, 1))]),
)  # fmt: skip
def test_constant_pad(shape: tuple[int, ...], pad: tuple[int, ...], dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    accuracy.check_op(
        lambda t: torch.nn.functional.pad(t, pad, value=1.5), x, overloads=["constant_pad_nd"]
    )


@pytest.mark.parametrize(
    ("shifts", "dims"),
    [
        pytest.param((2,), (1,), id="one-dim"),
        pytest.param((-1, 3), (1, 2), id="two-dims-swin"),
        pytest.param((7,), (), id="flattened"),
        pytest.param((1, 2), (0, 0), id="same-dim-twice"),
        pytest.param((0, 5), (1, -2), id="zero-and-full-turn"),
        pytest.param((1, -2, 3), (0, 1, 2), id="three-dims"),
    ],
)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_roll(shifts: tuple[int, ...], dims: tuple[int, ...], layout: str) -> None:
    """Swin's shifted windows: each block of the result is one strided copy."""
    x = accuracy.arrange(accuracy.make_tensor((3, 5, 4, 2), torch.float32), layout)
    accuracy.check_op(lambda t: torch.roll(t, shifts, dims), x, overloads=["roll"])


def test_roll_gradient_is_the_opposite_roll() -> None:
    x = accuracy.make_tensor((4, 6), torch.bfloat16)
    grad = accuracy.make_tensor((4, 6), torch.bfloat16)
    rolled = accuracy.with_gradients(lambda t: torch.roll(t, (1, -2), (0, 1)))
    accuracy.check_op(rolled, x, grad, overloads=["roll"])


def test_roll_with_misaligned_shifts_raises_atens_error() -> None:
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError) as native:
        torch.roll(x, (1, 2), (0,))
    with gems_kernels.use_gems(include=["roll"]), pytest.raises(RuntimeError) as gems:
        torch.roll(x, (1, 2), (0,))
    assert str(gems.value) == str(native.value)


@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
def test_copy_into_bool_is_not_zero(source: torch.dtype) -> None:
    """copy_ into a bool tensor (it went to ATen before): True where the source is not 0, NaN
    included, as ATen converts (a cast would truncate 0.5 to False)."""
    values = [0.0, 0.5, 2.0, 3.0] + ([float("nan")] if source.is_floating_point else [0.0])
    x = torch.tensor(values).to(source)
    target = torch.zeros(2, 5, dtype=torch.bool)
    accuracy.check_op(lambda t, s: t.copy_(s), target, x, overloads=["copy_"])
