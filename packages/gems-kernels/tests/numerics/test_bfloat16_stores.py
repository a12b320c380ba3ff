"""bfloat16 results are rounded to nearest-even in every kernel, not truncated (issue 27).

Triton's interpreter casts float32 to bfloat16 by dropping the low bits. A value exactly between
two bfloat16 numbers with an odd lower neighbour tells the two apart: 1 + 3 * 2**-8 lies between
1 + 2**-7 (odd last bit) and 1 + 2**-6 (even); nearest-even gives the latter, truncation the
former. Each op below gets bfloat16 inputs whose exact float64 result is that tie.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from gems_kernels.pointwise.rounding import store

TIE = 1 + 3 * 2**-8  # exactly between 1 + 2**-7 and 1 + 2**-6
EVEN = 1 + 2**-6  # nearest-even of TIE
TRUNCATED = 1 + 2**-7  # what a truncating cast gives
STEP = 6 * 2**-8  # 1 + STEP is a bfloat16; the mean of 1 and 1 + STEP is TIE
BF16 = torch.bfloat16


@triton.jit
def _store_kernel(values, out, numel, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    store(out + offsets, tl.load(values + offsets, mask=offsets < numel), mask=offsets < numel)


# (float32 input, its nearest-even bfloat16); ties both ways, signs, overflow, NaN, subnormals.
_CASES = [
    (1 + 2**-8, 1.0),  # tie, even neighbour below
    (TIE, EVEN),  # tie, even neighbour above
    (-TIE, -EVEN),
    (1 + 2**-8 + 2**-20, 1 + 2**-7),  # just above a tie
    (1 + 3 * 2**-8 - 2**-20, 1 + 2**-7),  # just below a tie
    ((2 - 2**-8) * 2**127, float("inf")),  # the largest bfloat16 plus half an ulp: a tie to inf
    (float("inf"), float("inf")),
    (float("-inf"), float("-inf")),
    (3 * 2**-134, 2**-132),  # a subnormal tie, even neighbour above
    (0.0, 0.0),
]


def test_store_rounds_to_nearest_even() -> None:
    values = torch.tensor([value for value, _ in _CASES] + [float("nan")], dtype=torch.float32)
    out = torch.empty(values.shape, dtype=BF16)
    _store_kernel[(1,)](values, out, values.numel(), BLOCK=16)
    expected = torch.tensor([rounded for _, rounded in _CASES], dtype=torch.float64)
    assert out[:-1].double().tolist() == expected.tolist()
    assert out[-1].isnan()


def test_store_keeps_other_dtypes() -> None:
    values = torch.tensor([1.5, -2.25, 7.0], dtype=torch.float32)
    for dtype in (torch.float32, torch.float16, torch.int64):
        out = torch.empty(3, dtype=dtype)
        _store_kernel[(1,)](values, out, 3, BLOCK=4)
        assert out.tolist() == values.to(torch.float64).to(dtype).tolist()


def _pair(first: float, second: float, dtype: torch.dtype, *shape: int) -> torch.Tensor:
    return torch.tensor([first, second], dtype=dtype).reshape(*shape)


def _sdpa(dtype: torch.dtype) -> torch.Tensor:
    # Two keys with equal scores: the output is the mean of their values.
    query = torch.ones(1, 1, 1, 4, dtype=dtype)
    key = torch.zeros(1, 1, 2, 4, dtype=dtype)
    value = _pair(1.0, 1 + STEP, dtype, 1, 1, 2, 1).expand(1, 1, 2, 4).contiguous()
    return F.scaled_dot_product_attention(query, key, value)


# Each returns a tensor whose every element's exact value is TIE (checked in float64), and the
# ATen overload it reaches.
_OPS: dict[str, tuple[Callable[[torch.dtype], torch.Tensor], str]] = {
    "mm": (lambda d: _pair(1.0, 3 * 2**-8, d, 1, 2) @ torch.ones(2, 1, dtype=d), "mm"),
    "addmm": (
        lambda d: torch.addmm(
            torch.ones(1, dtype=d), _pair(3 * 2**-8, 0.0, d, 1, 2), torch.ones(2, 1, dtype=d)
        ),
        "addmm",
    ),
    "bmm": (
        lambda d: torch.bmm(_pair(1.0, 3 * 2**-8, d, 1, 1, 2), torch.ones(1, 2, 1, dtype=d)),
        "bmm",
    ),
    "conv2d": (
        lambda d: F.conv2d(_pair(1.0, 3 * 2**-8, d, 1, 2, 1, 1), torch.ones(1, 2, 1, 1, dtype=d)),
        "convolution",
    ),
    "sum": (lambda d: _pair(1.0, 3 * 2**-8, d, 2).sum(), "sum"),
    "mean": (lambda d: _pair(2.0, 6 * 2**-8, d, 2).mean(), "mean"),
    "cumsum": (lambda d: _pair(1.0, 3 * 2**-8, d, 2).cumsum(0)[1:], "cumsum"),
    "avg_pool2d": (
        lambda d: F.avg_pool2d(_pair(1.0, 1 + STEP, d, 1, 1, 1, 2), (1, 2)),
        "avg_pool2d",
    ),
    "upsample_bilinear2d": (
        lambda d: F.interpolate(
            _pair(1.0, 1 + STEP, d, 1, 1, 1, 2), size=(1, 3), mode="bilinear", align_corners=True
        )[..., 1],
        "upsample_bilinear2d",
    ),
    "scaled_dot_product_attention": (_sdpa, "scaled_dot_product_attention"),
}


@pytest.mark.parametrize("op", sorted(_OPS))
def test_op_result_rounds_to_nearest_even(op: str, recorded: Path) -> None:
    fn, overload = _OPS[op]
    assert torch.all(fn(torch.float64) == TIE), "the inputs must make an exact tie"
    with gems_kernels.use_gems(record=True, record_path=recorded):
        actual = fn(BF16)
    assert any(line.startswith(overload) for line in recorded.read_text().split()), overload
    assert actual.dtype == BF16
    assert actual.double().flatten().tolist() == [EVEN] * actual.numel(), (
        f"{op}: {actual.double().flatten().tolist()} (truncation gives {TRUNCATED})"
    )
