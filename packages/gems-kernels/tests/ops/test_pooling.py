"""Max, average and adaptive average pooling, forward and backward, against float64 ATen."""

from __future__ import annotations

from collections.abc import Callable

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

_MAX = ["max_pool2d_with_indices", "max_pool2d_with_indices_backward"]
_AVG = ["avg_pool2d", "avg_pool2d_backward"]
_ADAPTIVE = ["_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"]

MAX_CASES = [
    pytest.param((2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1), id="resnet-stem"),
    pytest.param((1, 2, 7, 7), dict(kernel_size=2), id="2x2"),
    pytest.param((1, 2, 8, 9), dict(kernel_size=(3, 2), stride=(2, 1), dilation=(2, 1)), id="dil"),
    pytest.param((2, 1, 7, 6), dict(kernel_size=3, stride=2, ceil_mode=True), id="ceil"),
    pytest.param((3, 5, 5), dict(kernel_size=3, stride=1, padding=1), id="unbatched-overlap"),
]
AVG_CASES = [
    pytest.param((2, 3, 8, 8), dict(kernel_size=2), id="2x2"),
    pytest.param((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1), id="pad"),
    pytest.param(
        (1, 2, 7, 6),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
        id="pad-excluded",
    ),
    pytest.param((1, 2, 7, 7), dict(kernel_size=3, stride=2, ceil_mode=True), id="ceil"),
    pytest.param(
        (2, 2, 5, 6), dict(kernel_size=(2, 3), stride=1, divisor_override=4), id="divisor"
    ),
]
ADAPTIVE_CASES = [
    pytest.param((2, 3, 7, 9), (3, 4), id="uneven"),
    pytest.param((1, 2, 3, 5), (7, 6), id="upsampling"),
    pytest.param((2, 4, 6, 6), (2, 3), id="even"),
    pytest.param((3, 5, 4), (2, 2), id="unbatched"),
]


def _check(
    fn: Callable[[torch.Tensor], torch.Tensor],
    shape: tuple[int, ...],
    overloads: list[str],
    dtype: torch.dtype = torch.float32,
    reduce_size: int = 9,
) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor(fn(x).shape, dtype)
    accuracy.check_op(
        accuracy.with_gradients(fn), x, grad, overloads=overloads, reduce_size=reduce_size
    )


@pytest.mark.parametrize(("shape", "options"), MAX_CASES)
def test_max_pool(shape: tuple[int, ...], options: dict[str, object]) -> None:
    _check(lambda x: F.max_pool2d(x, **options), shape, _MAX)  # type: ignore[arg-type]


@pytest.mark.parametrize(("shape", "options"), AVG_CASES)
def test_avg_pool(shape: tuple[int, ...], options: dict[str, object]) -> None:
    _check(lambda x: F.avg_pool2d(x, **options), shape, _AVG)  # type: ignore[arg-type]


@pytest.mark.parametrize(("shape", "size"), ADAPTIVE_CASES)
def test_adaptive_avg_pool(shape: tuple[int, ...], size: tuple[int, int]) -> None:
    _check(lambda x: F.adaptive_avg_pool2d(x, size), shape, _ADAPTIVE)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype: torch.dtype) -> None:
    shape = (1, 3, 6, 7)
    _check(lambda x: F.max_pool2d(x, 3, 2, 1), shape, _MAX, dtype)
    _check(lambda x: F.avg_pool2d(x, 2, 1), shape, _AVG, dtype)
    _check(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), shape, _ADAPTIVE, dtype)


def test_max_pool_indices_nan_and_minus_infinity_as_aten() -> None:
    """NaN wins its window (the last NaN's position); a window of -inf points at its first
    element; the indices are flat positions in each plane."""
    x = torch.tensor(
        [[[[1.0, torch.nan, 3.0, -torch.inf],
           [torch.nan, 0.0, 2.0, -torch.inf],
           [-torch.inf, -torch.inf, 5.0, 5.0],
           [-torch.inf, -torch.inf, 4.0, 5.0]]]]
    )  # fmt: skip
    with gems_kernels.use_gems(include=_MAX, record=True) as session:
        values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert session.recorder is not None and session.recorder.seen == {_MAX[0]}
    assert indices.tolist() == [[[[4, 2], [8, 10]]]]
    assert values.isnan().tolist() == [[[[True, False], [False, False]]]]
    assert values[0, 0, 0, 1] == 3.0 and values[0, 0, 1, 0] == -torch.inf


def test_channels_last_input_keeps_its_format() -> None:
    x = accuracy.make_tensor((2, 3, 6, 6), torch.float32).to(memory_format=torch.channels_last)
    with gems_kernels.use_gems(include=_MAX + _AVG):
        values = F.max_pool2d(x, 3, 2, 1)
        average = F.avg_pool2d(x, 2)
    assert values.is_contiguous(memory_format=torch.channels_last)
    accuracy.assert_close(values, F.max_pool2d(x.double(), 3, 2, 1))
    accuracy.assert_close(average, F.avg_pool2d(x.double(), 2))


def test_bad_windows_raise_atens_error() -> None:
    x = accuracy.make_tensor((1, 1, 4, 4), torch.float32)
    for call in (lambda: F.max_pool2d(x, 2, padding=2), lambda: F.avg_pool2d(x, 8)):
        with pytest.raises(RuntimeError) as native:
            call()
        with gems_kernels.use_gems(include=_MAX + _AVG), pytest.raises(RuntimeError) as gems:
            call()
        assert str(gems.value) == str(native.value)
