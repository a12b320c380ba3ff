"""gather, scatter, scatter_add and scatter_reduce against ATen, with index tensors smaller
than self (and src) outside ``dim``, every layout, int and float dtypes, duplicates; ATen's
errors; gather's gradient."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy
from gems_kernels.ops.scatter_gather import is_gather_shape

Shape = tuple[int, ...]

# (self shape, dim, index shape, src shape)
SHAPES = [
    pytest.param((), 0, (), (), id="0d"),
    pytest.param((1,), 0, (3,), (4,), id="1-element"),
    pytest.param((4, 6), 1, (3, 2), (3, 5), id="smaller-outside-dim"),
    pytest.param((5, 4), 0, (7, 2), (7, 3), id="longer-along-dim"),
    pytest.param((3, 5, 4), -1, (2, 3, 6), (2, 4, 6), id="odd-3d"),
    pytest.param((3, 4, 5), 0, (2, 3, 4), (2, 4, 5), id="narrowed-inner-dims"),
    pytest.param((2, 1, 3, 1, 5), 2, (1, 1, 4, 1, 3), (2, 1, 4, 1, 3), id="5d"),
]
DTYPES = [torch.float32, torch.int64, torch.bfloat16, torch.int32, torch.float16]
LAYOUTS = ["contiguous", "strided"]


def _cases() -> list[Any]:
    """Each shape with a dtype and a layout (self, index and src all in that layout)."""
    return [
        pytest.param(*shape.values, dtype, layout, id=f"{shape.id}-{dtype}-{layout}")
        for i, shape in enumerate(SHAPES)
        for dtype, layout in [(DTYPES[i % len(DTYPES)], LAYOUTS[i % 2])]
    ]


def _index(self_shape: Shape, dim: int, shape: Shape, layout: str,
           *, distinct: bool = False) -> torch.Tensor:  # fmt: skip
    """Positions along ``dim`` in [0, size); ``distinct`` draws a permutation prefix per line
    (so assignments have one writer per position)."""
    size = self_shape[dim] if self_shape else 1
    if distinct and shape:
        wide = list(shape)
        wide[dim] = size
        index = torch.argsort(torch.rand(wide), dim=dim).narrow(dim, 0, min(shape[dim], size))
    else:
        index = torch.randint(0, size, shape)
    return accuracy.arrange(index.to(accuracy.device()), layout)


def _inputs(
    self_shape: Shape, src_shape: Shape, dtype: torch.dtype, layout: str, **bounds: float
) -> tuple[torch.Tensor, ...]:
    return tuple(
        accuracy.arrange(accuracy.make_tensor(shape, dtype, **bounds), layout)
        for shape in (self_shape, src_shape)
    )


def _check_gather(x: torch.Tensor, src: torch.Tensor, dim: int, index_shape: Shape,
                  layout: str) -> None:  # fmt: skip
    index = _index(tuple(x.shape), dim, index_shape, layout)
    accuracy.check_op(lambda t, i: torch.gather(t, dim, i), x, index, overloads=["gather"])


def _check_scatter(x: torch.Tensor, src: torch.Tensor, dim: int, index_shape: Shape,
                   layout: str) -> None:  # fmt: skip
    index = _index(tuple(x.shape), dim, index_shape, layout, distinct=True)
    accuracy.check_op(
        lambda t, i, s: torch.scatter(t, dim, i, s), x, index, src, overloads=["scatter.src"]
    )
    accuracy.check_op(
        lambda t, i: torch.scatter(t, dim, i, 2), x, index, overloads=["scatter.value"]
    )


def _check_scatter_add(x: torch.Tensor, src: torch.Tensor, dim: int, index_shape: Shape,
                       layout: str) -> None:  # fmt: skip
    index = _index(tuple(x.shape), dim, index_shape, layout)
    terms = 1 + (index_shape[dim] if index_shape else 1)
    accuracy.check_op(
        lambda t, i, s: torch.scatter_add(t, dim, i, s), x, index, src,
        overloads=["scatter_add"], reduce_size=terms,
    )  # fmt: skip
    accuracy.check_op(
        lambda t, i, s: t.scatter_add_(dim, i, s), x, index, src,
        overloads=["scatter_add_"], reduce_size=terms,
    )  # fmt: skip


CHECKS: dict[str, Callable[[torch.Tensor, torch.Tensor, int, Shape, str], None]] = {
    "gather": _check_gather,
    "scatter": _check_scatter,
    "scatter_add": _check_scatter_add,
}


@pytest.mark.parametrize("op", list(CHECKS))
@pytest.mark.parametrize(
    ("self_shape", "dim", "index_shape", "src_shape", "dtype", "layout"), _cases()
)
def test_along_dim(
    op: str,
    self_shape: Shape,
    dim: int,
    index_shape: Shape,
    src_shape: Shape,
    dtype: torch.dtype,
    layout: str,
) -> None:
    x, src = _inputs(self_shape, src_shape, dtype, layout)
    CHECKS[op](x, src, dim, index_shape, layout)


REDUCE_CASES = [
    pytest.param(reduce, include_self, dtype, id=f"{reduce}-{include}-{dtype}")
    for n, (reduce, (include_self, include)) in enumerate(
        (r, i)
        for r in ("sum", "prod", "mean", "amax", "amin")
        for i in ((True, "with-self"), (False, "without-self"))
    )
    for dtype in [(torch.float32, torch.int64, torch.bfloat16, torch.int32)[n % 4]]
]


@pytest.mark.parametrize(("reduce", "include_self", "dtype"), REDUCE_CASES)
def test_scatter_reduce(reduce: str, include_self: bool, dtype: torch.dtype) -> None:
    # Index (3, 2) into self (4, 5) along dim 0: duplicates, and positions no index names.
    x, src = _inputs((4, 5), (3, 4), dtype, "strided", low=0.5, high=1.5)
    if not dtype.is_floating_point:
        x, src = _inputs((4, 5), (3, 4), dtype, "strided", low=-3, high=3)
    index = torch.tensor([[0, 3], [0, 0], [2, 0]], device=accuracy.device())
    accuracy.check_op(
        lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=include_self),
        x, index, src, overloads=["scatter_reduce.two"], reduce_size=4,
    )  # fmt: skip
    accuracy.check_op(
        lambda t, i, s: t.scatter_reduce_(0, i, s, reduce, include_self=include_self),
        x, index, src, overloads=["scatter_reduce_.two"], reduce_size=4,
    )  # fmt: skip


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_scatter_reduce_sums_in_order_when_deterministic(
    reduce: str, deterministic_mode: Callable[[bool], None]
) -> None:
    """Deterministic mode sums float lines in index order instead of with atomic adds."""
    deterministic_mode(True)
    x, src = _inputs((4, 5), (3, 4), torch.float32, "contiguous")
    index = torch.tensor([[0, 3], [0, 0], [2, 0]], device=accuracy.device())
    accuracy.check_op(
        lambda t, i, s: t.scatter_reduce(0, i, s, reduce), x, index, src,
        overloads=["scatter_reduce.two"], reduce_size=4,
    )  # fmt: skip


def test_scatter_reduce_amax_propagates_nan() -> None:
    x = torch.zeros(3, device=accuracy.device())
    src = torch.tensor([1.0, float("nan"), 2.0], device=accuracy.device())
    index = torch.tensor([1, 1, 1], device=accuracy.device())
    accuracy.check_op(
        lambda t, i, s: t.scatter_reduce(0, i, s, "amax"), x, index, src,
        overloads=["scatter_reduce.two"],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("call", "overload"),
    [
        pytest.param(lambda x, i: x.gather(1, i), "gather", id="gather"),
        pytest.param(lambda x, i: x.scatter(1, i, 0.5), "scatter.value", id="scatter"),
        pytest.param(lambda x, i: x.scatter_add(1, i, x), "scatter_add", id="scatter_add"),
        pytest.param(
            lambda x, i: x.scatter_reduce(1, i, x, "prod"), "scatter_reduce.two", id="reduce"
        ),
    ],
)
@pytest.mark.parametrize("position", [4, -1], ids=["past-the-end", "negative"])
def test_out_of_range_index_matches_aten(
    call: Callable[[torch.Tensor, torch.Tensor], object], overload: str, position: int
) -> None:
    x = torch.ones(3, 4, device=accuracy.device())
    index = torch.tensor([[0, position]], device=accuracy.device())
    with pytest.raises(RuntimeError) as native:
        call(x, index)
    with (
        gems_kernels.use_gems(include=[overload], record=True) as session,
        pytest.raises(RuntimeError) as raised,
    ):
        call(x, index)
    assert session.recorder is not None and overload in session.recorder.seen
    assert str(raised.value) == str(native.value).splitlines()[0]


@pytest.mark.parametrize(
    ("index", "src", "expected"),
    [
        pytest.param(torch.zeros(2, 3, dtype=torch.int64), None, True, id="smaller"),
        pytest.param(torch.zeros(2, 5, dtype=torch.int64), None, False, id="larger-outside-dim"),
        pytest.param(torch.zeros(2, 3, dtype=torch.int32), None, False, id="int32-index"),
        pytest.param(torch.zeros(2, dtype=torch.int64), None, False, id="other-rank"),
        pytest.param(torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, 2), False, id="small-src"),
        pytest.param(
            torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, 3).double(), False, id="src-dtype"
        ),
    ],
)
def test_gather_shape_condition(
    index: torch.Tensor, src: torch.Tensor | None, expected: bool
) -> None:
    """Calls outside the contract go to ATen, which reports them."""
    args = () if src is None else (src,)
    assert is_gather_shape(torch.ones(3, 4), 0, index, *args) is expected


@pytest.mark.parametrize(
    ("self_", "deterministic", "expected"),
    [
        pytest.param(torch.zeros(3, 4), False, True, id="float"),
        pytest.param(torch.zeros(3, 4), True, False, id="float-deterministic"),
        pytest.param(torch.zeros(3, 4).int(), True, True, id="int-deterministic"),
        pytest.param(torch.zeros(3, 4).bool(), False, False, id="bool"),
        pytest.param(torch.zeros(3, 1).expand(3, 4), False, False, id="overlapping-self"),
    ],
)
def test_scatter_add_condition(
    self_: torch.Tensor,
    deterministic: bool,
    expected: bool,
    deterministic_mode: Callable[[bool], None],
) -> None:
    """Atomic float sums are not reproducible: deterministic mode keeps ATen's scatter_add."""
    from gems_kernels.ops.scatter_gather import fits_scatter_add

    index, src = torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, 3, dtype=self_.dtype)
    deterministic_mode(deterministic)
    assert fits_scatter_add(self_, 0, index, src) is expected


def test_gather_gradient_under_enable(recorded: Path) -> None:
    x = accuracy.make_tensor((4, 5), torch.float32)
    index = torch.tensor([[0, 4, 4], [2, 2, 1]], device=accuracy.device())
    grad = accuracy.make_tensor((2, 3), torch.float32)
    fn = accuracy.with_gradients(lambda t, i: torch.gather(t, 1, i))
    gems_kernels.enable(record=True, record_path=recorded)
    try:
        actual = fn(x, index, grad)
    finally:
        gems_kernels.disable()
    assert {"gather", "scatter_add_"} <= set(recorded.read_text().split())
    accuracy.assert_close(actual, accuracy.reference_call(fn, x, index, grad), reduce_size=2)
