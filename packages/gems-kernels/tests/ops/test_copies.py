"""fill_, zero_ (and so zeros/ones/full) and cat against ATen."""

from __future__ import annotations

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
