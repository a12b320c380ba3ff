"""Advanced indexing (index.Tensor) and index_put (_index_put_impl_) against ATen: index
tensors with None gaps, broadcasting, bool masks, negative and duplicate positions, every
layout; ATen's errors; and the gradient of ``x[idx]`` (index_put accumulate) in training."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy

aten = torch.ops.aten
Indices = list[torch.Tensor | None]


def _t(values: list, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=accuracy.device())


def _mask5() -> torch.Tensor:
    return _t([True, False, False, True, False], torch.bool)


def _mask3x4() -> torch.Tensor:
    return _t([[1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 1, 0]], torch.bool)


def _strided(values: list) -> torch.Tensor:
    """An int64 index tensor in a non-contiguous layout."""
    return accuracy.non_contiguous(_t(values))


# (self shape, dtype, layout, indices)
INDEX_CASES = [
    pytest.param(
        (7,), torch.float32, "contiguous", lambda: [_t([0, -1, 3, -7, 6])], id="1d-negative"
    ),
    pytest.param((4, 5), torch.float32, "contiguous", lambda: [_t(2)], id="0d-index"),
    pytest.param(
        (1,), torch.int64, "contiguous", lambda: [_t([0, 0, -1])], id="1-element-duplicates"
    ),
    pytest.param(
        (5, 3), torch.bfloat16, "contiguous", lambda: [_t([4, 0, 4], torch.int32)], id="rows-int32"
    ),
    pytest.param(
        (3, 6, 2),
        torch.float16,
        "contiguous",
        lambda: [None, _t([[5, 0], [-1, 2]])],
        id="middle-dim",
    ),
    pytest.param(
        (4, 3, 5),
        torch.float32,
        "contiguous",
        lambda: [_t([0, 3]), None, _t([4, -5])],
        id="separated",
    ),
    pytest.param(
        (4, 5), torch.int32, "contiguous", lambda: [_t([[0], [3]]), _t([1, 4, -1])], id="broadcast"
    ),
    pytest.param(
        (2, 3, 4, 5),
        torch.float32,
        "strided",
        lambda: [None, _t([2, 0]), _t([1]), _t([3, -4])],
        id="4d-three-adjacent",
    ),
    pytest.param(
        (2, 1, 3, 1, 5),
        torch.float32,
        "strided",
        lambda: [None, None, _t([2, 0, 1, 2])],
        id="5d-middle",
    ),
    pytest.param((3, 4), torch.float32, "contiguous", lambda: [_mask3x4()], id="bool-mask"),
    pytest.param(
        (2, 5, 3), torch.int64, "strided", lambda: [None, _mask5()], id="bool-mask-middle"
    ),
    pytest.param(
        (4, 5), torch.float32, "contiguous", lambda: [_t([1, 3]), _mask5()], id="bool-and-int"
    ),
    pytest.param(
        (4, 6),
        torch.float32,
        "strided",
        lambda: [_strided([3, 0, -1])],
        id="strided-self-and-index",
    ),
    pytest.param(
        (3, 4), torch.float32, "contiguous", lambda: [_t([], torch.int64)], id="empty-index"
    ),
]


@pytest.mark.parametrize(("shape", "dtype", "layout", "make_indices"), INDEX_CASES)
def test_index(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
    make_indices: Callable[[], Indices],
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    accuracy.check_op(aten.index.Tensor, x, make_indices(), overloads=["index.Tensor"])


def test_index_through_python_syntax_permuted_self() -> None:
    x = accuracy.make_tensor((5, 4, 3), torch.float32).permute(2, 0, 1)
    rows, cols = _t([0, 2, -1]), _t([3, 3, 1])
    accuracy.check_op(lambda t: t[1:, rows, cols], x, overloads=["index.Tensor"])
    accuracy.check_op(lambda t: t[t > 0], x, overloads=["index.Tensor"])
    # Dims after the indexed one that do not collapse into one stride.
    y = accuracy.make_tensor((4, 5, 3), torch.float32).transpose(1, 2)
    accuracy.check_op(lambda t: t[rows], y, overloads=["index.Tensor"])


def _same_error_as_aten(call: Callable[[], object], overload: str) -> None:
    """``call`` raises under gems (from the gems kernel) what ATen raises, message included."""
    with pytest.raises(Exception) as native:
        call()
    with (
        gems_kernels.use_gems(include=[overload], record=True) as session,
        pytest.raises(native.type) as raised,
    ):
        call()
    assert session.recorder is not None and overload in session.recorder.seen
    assert str(raised.value).splitlines()[0] == str(native.value).splitlines()[0]


# (self shape, indices) that ATen rejects
INDEX_ERRORS = [
    pytest.param((3,), lambda: [_t([1, 3])], id="out-of-range"),
    pytest.param((2, 4), lambda: [None, _t([-5])], id="out-of-range-negative"),
    pytest.param((3,), lambda: [_t([1.0], torch.float32)], id="float-index"),
    pytest.param((3,), lambda: [_t([0]), _t([0])], id="too-many-indices"),
    pytest.param((3, 4), lambda: [_t([True] * 4, torch.bool)], id="mask-shape"),
    pytest.param((3, 4), lambda: [_t([0, 1]), _t([0, 1, 2])], id="no-broadcast"),
]


@pytest.mark.parametrize(("shape", "make_indices"), INDEX_ERRORS)
def test_index_errors_match_aten(
    shape: tuple[int, ...], make_indices: Callable[[], Indices]
) -> None:
    x = accuracy.make_tensor(shape, torch.float32)
    _same_error_as_aten(lambda: aten.index.Tensor(x, make_indices()), "index.Tensor")


# (self shape, dtype, layout, indices, values shape, accumulate, terms summed per position)
PUT_CASES = [
    pytest.param(
        (6, 4),
        torch.float32,
        "contiguous",
        lambda: [_t([4, -1, 0])],
        (3, 4),
        False,
        1,
        id="rows-negative",
    ),
    pytest.param(
        (5,), torch.float32, "contiguous", lambda: [_t(2)], (), False, 1, id="0d-index-and-value"
    ),
    pytest.param(
        (1,),
        torch.float32,
        "contiguous",
        lambda: [_t([0, 0, -1])],
        (3,),
        True,
        4,
        id="1-element-accumulate",
    ),
    pytest.param(
        (5, 3),
        torch.float32,
        "strided",
        lambda: [_t([0, 4, 0, 0])],
        (4, 3),
        True,
        4,
        id="duplicates-float32",
    ),
    pytest.param(
        (4, 5),
        torch.int64,
        "contiguous",
        lambda: [None, _t([1, 1, -1], torch.int32)],
        (4, 3),
        True,
        1,
        id="duplicates-int64",
    ),
    pytest.param(
        (4, 5),
        torch.int32,
        "strided",
        lambda: [_strided([2, 2, 0]), _t([1])],
        (1,),
        True,
        1,
        id="broadcast-int32",
    ),
    pytest.param(
        (3, 4, 5),
        torch.bfloat16,
        "contiguous",
        lambda: [_t([0, 2, 0]), None, _t([1, 1, 1])],
        (4,),
        True,
        3,
        id="separated-bf16",
    ),
    pytest.param(
        (2, 3, 4),
        torch.float16,
        "strided",
        lambda: [None, _t([[2], [0]]), _t([3, -1])],
        (2, 1, 2),
        False,
        1,
        id="odd-3d-fp16",
    ),
    pytest.param(
        (3, 4), torch.int64, "contiguous", lambda: [_mask3x4()], (), False, 1, id="bool-mask"
    ),
    pytest.param(
        (3, 5),
        torch.float32,
        "strided",
        lambda: [None, _mask5()],
        (3, 1),
        True,
        1,
        id="bool-mask-accumulate",
    ),
]


@pytest.mark.parametrize(
    ("shape", "dtype", "layout", "make_indices", "values_shape", "accumulate", "terms"), PUT_CASES
)
def test_index_put(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
    make_indices: Callable[[], Indices],
    values_shape: tuple[int, ...],
    accumulate: bool,
    terms: int,
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    values = accuracy.make_tensor(values_shape, dtype)
    accuracy.check_op(
        lambda t, i, v: aten.index_put_(t, i, v, accumulate),
        x,
        make_indices(),
        values,
        overloads=["_index_put_impl_"],
        reduce_size=terms,
    )


def test_index_put_through_setitem() -> None:
    x = accuracy.make_tensor((5, 3), torch.bfloat16)

    def assign(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        t[i, 1:] = torch.tensor(2.0, dtype=t.dtype)
        return t

    accuracy.check_op(assign, x, _t([0, 3]), overloads=["_index_put_impl_"])


@pytest.mark.parametrize(
    ("indices", "values_shape"),
    [
        pytest.param(lambda: [_t([5])], (1,), id="out-of-range"),
        pytest.param(lambda: [_t([0, 1])], (3,), id="values-do-not-broadcast"),
    ],
)
def test_index_put_errors_match_aten(
    indices: Callable[[], Indices], values_shape: tuple[int, ...]
) -> None:
    x, values = torch.zeros(3, device=accuracy.device()), torch.ones(values_shape)
    _same_error_as_aten(lambda: aten.index_put_(x, indices(), values), "_index_put_impl_")


@pytest.mark.parametrize(
    ("self_", "accumulate", "deterministic", "expected"),
    [
        pytest.param(torch.zeros(3, dtype=torch.bool), False, False, True, id="assign-bool"),
        pytest.param(torch.zeros(3, dtype=torch.bool), True, False, False, id="accumulate-bool"),
        pytest.param(torch.zeros(3), True, False, True, id="accumulate-float"),
        pytest.param(torch.zeros(3), True, True, False, id="accumulate-float-deterministic"),
        pytest.param(torch.zeros(3).long(), True, True, True, id="accumulate-int-deterministic"),
        pytest.param(torch.zeros(1).expand(3), False, False, False, id="overlapping-self"),
    ],
)
def test_index_put_condition(
    self_: torch.Tensor,
    accumulate: bool,
    deterministic: bool,
    expected: bool,
    deterministic_mode: Callable[[bool], None],
) -> None:
    """Calls the kernels do not serve go to ATen (which reports them, or sums in order)."""
    from gems_kernels.ops.advanced_indexing import is_index_put

    values = torch.ones(1, dtype=self_.dtype)
    deterministic_mode(deterministic)
    assert is_index_put(self_, [_t([0])], values, accumulate) is expected


def _train(weight: torch.Tensor, steps: int) -> tuple[torch.Tensor, ...]:
    """SGD on a loss that reads rows (with duplicates), columns and a mask of ``weight``."""
    weight = weight.detach().clone().requires_grad_()
    rows, cols = _t([[5, 0], [5, -1]]), _t([3, 3, 1])
    losses = []
    for _ in range(steps):
        picked = weight[rows]
        loss = picked.square().sum() + (weight[:, cols] * 2).sum() + weight[weight > 0].sum()
        loss.backward()
        assert weight.grad is not None
        with torch.no_grad():
            weight -= 0.1 * weight.grad
        weight.grad = None
        losses.append(loss.detach())
    return torch.stack(losses), weight.detach()


def test_gradient_through_indexing_under_enable(recorded: Path) -> None:
    weight = accuracy.make_tensor((6, 4), torch.float32)
    gems_kernels.enable(record=True, record_path=recorded)
    try:
        actual = _train(weight, steps=3)
    finally:
        gems_kernels.disable()
    assert {"index.Tensor", "_index_put_impl_"} <= set(recorded.read_text().split())
    accuracy.assert_close(actual, _train(accuracy.to_reference(weight), steps=3), reduce_size=8)
