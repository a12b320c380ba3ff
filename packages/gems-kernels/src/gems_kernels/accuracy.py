"""The accuracy harness shared by the tests and the benchmarks.

Results are compared with a reference computed by ATen on CPU in float64 (inputs upcast), with a
tolerance per dtype; integer, bool and index results must match exactly; dtype and shape are
always checked. ``GEMS_TEST_MODE=full`` selects the larger shape list meant for GPUs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch

from gems_kernels.backends import current_vendor

__all__ = [
    "FLOAT_DTYPES",
    "TOLERANCES",
    "Tolerance",
    "arrange",
    "assert_close",
    "check_fused",
    "check_op",
    "device",
    "dtype_variants",
    "is_full_mode",
    "make_tensor",
    "non_contiguous",
    "pointwise_shapes",
    "pointwise_variants",
    "reduction_cases",
    "reference_call",
    "spread",
    "to_reference",
    "with_gradients",
]


@dataclass(frozen=True)
class Tolerance:
    """Allowed |actual - expected| <= atol + rtol * |expected|."""

    rtol: float
    atol: float


TOLERANCES: Final[Mapping[torch.dtype, Tolerance]] = {
    torch.float16: Tolerance(rtol=1e-3, atol=1e-3),
    torch.bfloat16: Tolerance(rtol=1.6e-2, atol=1e-2),
    torch.float32: Tolerance(rtol=1.3e-5, atol=1e-5),
    torch.float64: Tolerance(rtol=1e-9, atol=1e-9),
}
FLOAT_DTYPES: Final = (torch.float32, torch.float16, torch.bfloat16)
_QUICK_SHAPES: Final = ((), (1,), (33,), (3, 5), (2, 3, 4), (2, 1, 3, 1, 5))
_FULL_SHAPES: Final = (
    (),
    (1,),
    (1024 * 1024 + 3,),
    (64, 129),
    (16, 33, 65),
    (8, 7, 16, 33),
    (4, 3, 5, 7, 9),
)


_QUICK_REDUCTION_CASES: Final = (
    ((), None),
    ((1,), [0]),
    ((37,), None),
    ((4, 9), [1]),
    ((4, 9), [0]),
    ((2, 3, 5), [0, 2]),
    ((2, 3, 4, 5), [-1]),
)
_FULL_REDUCTION_CASES: Final = (
    *_QUICK_REDUCTION_CASES,
    ((1024 * 1024 + 7,), None),
    ((256, 4097), [1]),
    ((4097, 256), [0]),
    ((8, 64, 33, 17), [1, 3]),
)


def reduction_cases() -> tuple[tuple[tuple[int, ...], list[int] | None], ...]:
    """(shape, dims) pairs for reduction tests; ``None`` reduces every dim."""
    return _FULL_REDUCTION_CASES if is_full_mode() else _QUICK_REDUCTION_CASES


def is_full_mode() -> bool:
    """Whether ``GEMS_TEST_MODE=full`` asks for the GPU-sized shape list."""
    return os.environ.get("GEMS_TEST_MODE", "quick") == "full"


def pointwise_shapes() -> tuple[tuple[int, ...], ...]:
    """Shapes for pointwise tests: 0-d, 1-element, odd sizes, 2-D to 5-D."""
    return _FULL_SHAPES if is_full_mode() else _QUICK_SHAPES


def spread(first: Sequence[Any], second: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Every pair in full mode; in quick mode each item of both lists at least once (cycled)."""
    if is_full_mode():
        return [(a, b) for a in first for b in second]
    count = max(len(first), len(second))
    return [(first[i % len(first)], second[i % len(second)]) for i in range(count)]


def _dtype_layouts() -> list[tuple[torch.dtype, str]]:
    pairs = [(dtype, "contiguous") for dtype in FLOAT_DTYPES]
    return pairs + [(dtype, "strided") for dtype in FLOAT_DTYPES]


def pointwise_variants() -> list[Any]:
    """pytest params (shape, dtype, layout) for pointwise tests: quick mode covers every shape,
    dtype and layout at least once; full mode every combination."""
    import pytest

    return [
        pytest.param(shape, dtype, layout, id=f"{shape}-{dtype}-{layout}".replace("torch.", ""))
        for shape, (dtype, layout) in spread(pointwise_shapes(), _dtype_layouts())
    ]


def dtype_variants(cases: Sequence[Any], dtypes: Sequence[torch.dtype] = FLOAT_DTYPES) -> list[Any]:
    """pytest params (*case, dtype) spreading ``dtypes`` over ``cases`` (see :func:`spread`)."""
    import pytest

    return [
        pytest.param(*case, dtype, id=f"{case}-{dtype}".replace("torch.", ""))
        for case, dtype in spread(cases, dtypes)
    ]


def arrange(tensor: torch.Tensor, layout: str) -> torch.Tensor:
    """``tensor`` as is (``contiguous``) or in a non-contiguous copy (``strided``)."""
    if layout not in ("contiguous", "strided"):
        raise ValueError(f"layout: expected 'contiguous' or 'strided', got {layout!r}")
    return non_contiguous(tensor) if layout == "strided" else tensor


def device() -> torch.device:
    """The device tensors for the current vendor live on."""
    return torch.device(current_vendor().device_type)


def make_tensor(
    shape: Sequence[int],
    dtype: torch.dtype,
    *,
    low: float = -3.0,
    high: float = 3.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Random values in [low, high) (integers and bools included) on :func:`device`."""
    if dtype == torch.bool:
        values = torch.rand(shape, generator=generator) < 0.5
    elif dtype.is_floating_point:
        values = torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
    else:
        values = torch.randint(int(low), int(high) + 1, shape, generator=generator)
    return values.to(dtype=dtype, device=device())


def non_contiguous(tensor: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous layout (a strided slice of a wider buffer)."""
    if tensor.dim() == 0:
        return tensor
    wide = torch.empty(
        (*tensor.shape[:-1], tensor.shape[-1] * 2), dtype=tensor.dtype, device=tensor.device
    )
    view = wide[..., ::2]
    view.copy_(tensor)
    return view


def to_reference(value: Any) -> Any:
    """``value`` on CPU with floating tensors upcast to float64 (recursively in sequences)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.double() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(to_reference(item) for item in value)
    return value


def assert_close(
    actual: Any,
    expected: Any,
    dtype: torch.dtype | None = None,
    *,
    reduce_size: int = 1,
    equal_nan: bool = True,
) -> None:
    """Check ``actual`` against the float64 ``expected`` (both may be tuples of tensors).

    ``dtype`` is the result dtype ``actual`` must have (default: ``expected``'s, for exact
    results). Floating results use :data:`TOLERANCES`, widened by sqrt(``reduce_size``) for
    results that sum that many terms; everything else must be equal.
    """
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            raise AssertionError(f"expected {len(expected)} results, got {actual!r}")
        for got, want in zip(actual, expected, strict=True):
            assert_close(got, want, dtype, reduce_size=reduce_size, equal_nan=equal_nan)
        return
    if not isinstance(actual, torch.Tensor):
        raise AssertionError(f"expected a tensor, got {type(actual).__name__}")
    if actual.shape != expected.shape:
        raise AssertionError(f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    if expected.is_floating_point():
        want_dtype = dtype if dtype is not None else actual.dtype
        if actual.dtype != want_dtype:
            raise AssertionError(f"dtype {actual.dtype} != expected {want_dtype}")
        tolerance = TOLERANCES[actual.dtype]
        scale = math.sqrt(max(reduce_size, 1))
        torch.testing.assert_close(
            actual.detach().cpu().double(),
            expected.to(actual.dtype).double(),
            rtol=tolerance.rtol * scale,
            atol=tolerance.atol * scale,
            equal_nan=equal_nan,
        )
    else:
        if actual.dtype != expected.dtype:
            raise AssertionError(f"dtype {actual.dtype} != expected {expected.dtype}")
        torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


def reference_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` evaluated by ATen on the float64 CPU copies of its arguments."""
    return fn(*to_reference(args), **to_reference(kwargs))


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone() if value.is_contiguous() else non_contiguous(value.clone())
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(item) for item in value)
    return value


def _check_like(actual: Any, native: Any) -> None:
    if isinstance(native, (tuple, list)):
        for got, want in zip(actual, native, strict=True):
            _check_like(got, want)
        return
    if isinstance(native, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise AssertionError(f"expected a tensor, got {type(actual).__name__}")
        if actual.dtype != native.dtype or actual.shape != native.shape:
            raise AssertionError(
                f"result {actual.dtype}{tuple(actual.shape)} != ATen's "
                f"{native.dtype}{tuple(native.shape)}"
            )


def check_op(
    fn: Callable[..., Any],
    *args: Any,
    overloads: Sequence[str],
    reduce_size: int = 1,
    **kwargs: Any,
) -> Any:
    """Run ``fn`` under gems and check it against ATen: same dtype and shape as ATen's result,
    values within tolerance of the float64 reference, and every overload in ``overloads``
    actually reached a gems kernel. Returns the gems result."""
    from gems_kernels.dispatch import use_gems  # the harness drives the public entry point

    native = fn(*_clone(args), **_clone(kwargs))
    with use_gems(include=overloads, record=True) as session:
        actual = fn(*_clone(args), **_clone(kwargs))
    assert session.recorder is not None
    missing = sorted(set(overloads) - session.recorder.seen)
    if missing:
        raise AssertionError(f"no gems kernel ran for {missing}")
    _check_like(actual, native)
    expected = reference_call(fn, *_clone(args), **_clone(kwargs))
    assert_close(actual, expected, reduce_size=reduce_size)
    return actual


def with_gradients(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """``fn`` turned into: (first output, gradients of its floating tensor inputs), for an
    upstream gradient given as the last argument."""

    def run(*args: Any) -> tuple[torch.Tensor, ...]:
        *inputs, grad = args
        leaves = [
            a.detach().requires_grad_()
            if isinstance(a, torch.Tensor) and a.is_floating_point()
            else a
            for a in inputs
        ]
        out = fn(*leaves)
        first = out[0] if isinstance(out, tuple) else out
        first.backward(grad)
        grads = [
            leaf.grad for leaf in leaves if isinstance(leaf, torch.Tensor) and leaf.requires_grad
        ]
        return (first.detach(), *grads)

    return run


def check_fused(
    fn: Callable[..., Any],
    reference: Callable[..., Any],
    *args: Any,
    reduce_size: int = 1,
) -> None:
    """``fn`` (a gems function) against ``reference`` (plain torch) run in float64 on CPU."""
    actual = fn(*args)
    expected = reference(*to_reference(args))
    assert_close(actual, expected, reduce_size=reduce_size)
