"""@pointwise_dynamic: layouts, broadcasting, promotion kinds, outputs, 64-bit indexing."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl  # noqa: F401  (the interpreter needs it in the kernels' globals)
from gems_kernels import accuracy
from gems_kernels.pointwise import dynamic, pointwise_dynamic


@pointwise_dynamic(is_tensor=[True, True, False], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def axpy(x, y, alpha):
    return x * alpha + y


@pointwise_dynamic(
    is_tensor=[True, True], promotions=[((0, 1), "DEFAULT"), ((0, 1), "ALWAYS_BOOL")]
)
@triton.jit
def sum_and_greater(x, y):
    return x + y, x > y


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "INT_TO_FLOAT")])
@triton.jit
def halve(x):
    return x * 0.5


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "BOOL_TO_LONG")])
@triton.jit
def twice(x):
    return x + x


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "NO_OPMATH")])
@triton.jit
def square(x):
    return x * x


def run(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> None:
    accuracy.assert_close(axpy(x, y, alpha), accuracy.to_reference(x * alpha + y))


LAYOUTS = [
    pytest.param(lambda b: (b, b), id="same"),
    pytest.param(lambda b: (b.t(), b.t()), id="transposed"),
    pytest.param(lambda b: (b[1:, ::2], b[:-1, 1::2]), id="sliced"),
    pytest.param(lambda b: (b[:1].expand(6, 8), b), id="expanded"),
    pytest.param(lambda b: (b, b[0]), id="broadcast-row"),
    pytest.param(lambda b: (b[:, :1], b[:1, :]), id="outer-broadcast"),
    pytest.param(lambda b: (b[0, 0], b), id="0d-and-2d"),
    pytest.param(lambda b: (b[0, 0], b[1, 1]), id="0d-only"),
    pytest.param(lambda b: (b[:0], b[0]), id="empty"),
    pytest.param(
        lambda b: (b.view(2, 3, 8).permute(2, 0, 1), b.view(2, 3, 8)[0, :, :1].t()), id="3d-perm"
    ),
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts(layout) -> None:
    base = torch.randn(6, 8)
    run(*layout(base))


def test_scalar_in_tensor_position() -> None:
    x = torch.randn(3, 4)
    accuracy.assert_close(axpy(x, 1.5, 3), accuracy.to_reference(x * 3 + 1.5))


def test_result_dtype_follows_promotion() -> None:
    half = torch.randn(5).half()
    assert axpy(half, torch.randn(5), 1.0).dtype == torch.float32
    assert axpy(half, 1.0, 1.0).dtype == torch.float16
    assert axpy(torch.arange(4), 1, 2).dtype == torch.int64
    assert axpy(torch.arange(4), 1.5, 2).dtype == torch.float32


@pytest.mark.parametrize(
    ("op", "source", "expected_dtype"),
    [
        pytest.param(halve, torch.arange(5, dtype=torch.int32), torch.float32, id="int-to-float"),
        pytest.param(twice, torch.tensor([True, False]), torch.int64, id="bool-to-long"),
        pytest.param(square, torch.randn(4).half(), torch.float16, id="no-opmath"),
    ],
)
def test_promotion_kinds(op, source: torch.Tensor, expected_dtype: torch.dtype) -> None:
    result = op(source)
    assert result.dtype == expected_dtype
    reference = {halve: lambda t: t * 0.5, twice: lambda t: t.long() * 2, square: lambda t: t * t}
    accuracy.assert_close(result, accuracy.to_reference(reference[op](source.double())))


def test_two_outputs_with_their_own_promotion() -> None:
    x, y = torch.randn(4, 3), torch.randn(3)
    total, greater = sum_and_greater(x, y)
    assert (total.dtype, greater.dtype) == (torch.float32, torch.bool)
    accuracy.assert_close(total, accuracy.to_reference(x + y))
    assert torch.equal(greater, x > y)


def test_out_and_inplace() -> None:
    x, y = torch.randn(3, 4), torch.randn(4)
    out = torch.empty(7)
    assert axpy(x, y, 2.0, out0=out) is out and out.shape == (3, 4)
    accuracy.assert_close(out, accuracy.to_reference(2 * x + y))
    expected = 2 * x + y
    assert axpy(x, y, 2.0, out0=x) is x
    accuracy.assert_close(x, accuracy.to_reference(expected))


def test_out_rejects_a_narrower_dtype() -> None:
    with pytest.raises(RuntimeError, match="can't be cast"):
        axpy(torch.randn(3), torch.randn(3), 1.0, out0=torch.empty(3, dtype=torch.int32))


@pytest.mark.parametrize(
    ("numel", "sizes", "strides", "expected"),
    [
        pytest.param(2**20, [2**20], [[1]], False, id="small"),
        pytest.param(2**31, [2**31], [[1]], True, id="numel-over-int32"),
        pytest.param(2**20, [2**10, 2**10], [[2**22, 1]], True, id="offset-over-int32"),
        pytest.param(2**20, [2**20], [[0], [1]], False, id="broadcast-stride-0"),
    ],
)
def test_needs_int64_indexing(
    numel: int, sizes: list[int], strides: list[list[int]], expected: bool
) -> None:
    assert dynamic.needs_int64_indexing(numel, sizes, strides) is expected


def test_int64_indexing_kernel_computes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2^31-element tensor does not fit here; lower the threshold to run the int64 path."""
    monkeypatch.setattr(dynamic, "_INT32_MAX", 16)
    x, y = torch.randn(5, 7), torch.randn(7)
    before = len(dynamic._KERNELS)
    run(x, y)
    specs = [spec for (_, spec) in list(dynamic._KERNELS)[before:]]
    assert specs and all(spec.index64 for spec in specs)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(
            lambda: axpy(torch.ones(2), torch.ones(2)),
            TypeError,
            "expected 3 arguments",
            id="arity",
        ),
        pytest.param(
            lambda: axpy(torch.ones(2), torch.ones(2), 1.0, out1=None),
            TypeError,
            "unexpected keyword",
            id="bad-output",
        ),
        pytest.param(
            lambda: pointwise_dynamic(is_tensor=[True], promotions=[((0,), "NOPE")]),
            ValueError,
            "unknown promotion kind",
            id="kind",
        ),
        pytest.param(
            lambda: pointwise_dynamic(is_tensor=[True], promotions=[((3,), "DEFAULT")]),
            ValueError,
            "out of range",
            id="index",
        ),
    ],
)
def test_errors(call, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_numbers_only_compute_on_0d_tensors() -> None:
    # As ATen does for torch.add(2.5, 1.5): the numbers become 0-d tensors of their own type.
    result = axpy(1.5, 2.0, 3.0)
    assert result.shape == () and result.dtype == torch.float32
    assert result.item() == axpy(torch.tensor(1.5), torch.tensor(2.0), 3.0).item()


def test_repeated_signatures_reuse_one_plan() -> None:
    op = dynamic.PointwiseOp(axpy.scalar_fn, axpy.is_tensor, axpy.promotions)
    x, y = torch.randn(4, 5), torch.randn(5)
    for alpha in (1.0, 2.0, -3.0):
        result = op(x, y, alpha)
        accuracy.assert_close(result, accuracy.to_reference(x * alpha + y))
    assert len(op._plans) == 1
    op(x.t(), 1.5, 2.0)
    op(x, y, 2, out0=x)
    assert len(op._plans) == 3
    accuracy.assert_close(op(x.t(), 0.5, 2.0), accuracy.to_reference(x.t() * 2 + 0.5))


def test_a_resizing_call_is_not_remembered() -> None:
    op = dynamic.PointwiseOp(axpy.scalar_fn, axpy.is_tensor, axpy.promotions)
    x, y = torch.randn(3), torch.randn(3)
    out = torch.empty(0)
    op(x, y, 1.0, out0=out)
    assert out.shape == (3,) and not op._plans
