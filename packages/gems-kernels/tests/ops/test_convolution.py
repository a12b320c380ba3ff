"""2-D and 1-D convolution forward and backward (implicit GEMM) against float64 ATen."""

from __future__ import annotations

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

_BOTH = ["convolution", "convolution_backward"]
# (N, C, H, W), (K, kernel), stride, padding, dilation, groups
CASES = [
    pytest.param((2, 3, 7, 6), (4, 3), 1, 1, 1, 1, id="3x3-same"),
    pytest.param((2, 4, 9, 8), (4, 3), 2, 1, 1, 4, id="depthwise-stride2"),
    pytest.param((1, 6, 5, 7), (4, 1), 1, 0, 1, 2, id="1x1-groups2"),
    pytest.param((2, 3, 8, 9), (5, 3), 2, 2, 2, 1, id="dilated-stride2"),
    pytest.param((1, 4, 6, 7), (6, (2, 3)), (1, 2), (1, 0), (2, 1), 2, id="rectangular"),
    pytest.param((2, 3, 8, 8), (5, 4), 4, 0, 1, 1, id="patch-embedding"),
    pytest.param((1, 2, 3, 3), (3, 5), 1, 2, 1, 1, id="kernel-over-image"),
]


def _operands(
    image: tuple[int, int, int, int], filters: tuple[int, object], groups: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out_channels, kernel = filters
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = accuracy.make_tensor(image, dtype)
    w = accuracy.make_tensor((out_channels, image[1] // groups, kh, kw), dtype, low=-1, high=1)
    b = accuracy.make_tensor((out_channels,), dtype)
    return x, w, b


def _terms(image: tuple[int, ...], w: torch.Tensor) -> int:
    """The largest number of products one result sums (for the tolerance)."""
    forward = w.shape[1] * w.shape[2] * w.shape[3]
    return max(forward, image[0] * image[2] * image[3], w.shape[0] * w.shape[2] * w.shape[3])


@pytest.mark.parametrize(("image", "filters", "stride", "padding", "dilation", "groups"), CASES)
def test_forward_and_backward_float32(
    image: tuple[int, int, int, int],
    filters: tuple[int, object],
    stride: object,
    padding: object,
    dilation: object,
    groups: int,
) -> None:
    x, w, b = _operands(image, filters, groups, torch.float32)

    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, b, stride, padding, dilation, groups)

    grad = accuracy.make_tensor(conv(x, w, b).shape, torch.float32)
    accuracy.check_op(
        accuracy.with_gradients(conv), x, w, b, grad, overloads=_BOTH,
        reduce_size=_terms(image, w),
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype: torch.dtype) -> None:
    x, w, b = _operands((2, 4, 6, 5), (6, 3), 2, dtype)

    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, b, 1, 1, 1, 2)

    grad = accuracy.make_tensor(conv(x, w, b).shape, dtype)
    accuracy.check_op(accuracy.with_gradients(conv), x, w, b, grad, overloads=_BOTH, reduce_size=60)


def test_channels_last_without_bias() -> None:
    x, w, _ = _operands((2, 4, 5, 6), (3, 3), 1, torch.float32)
    x = x.to(memory_format=torch.channels_last)
    grad = accuracy.make_tensor((2, 3, 5, 6), torch.float32)
    conv = accuracy.with_gradients(lambda x, w: F.conv2d(x, w, None, 1, 1))
    with gems_kernels.use_gems(include=_BOTH, record=True) as session:
        got = conv(x, w, grad)
    assert session.recorder is not None and session.recorder.seen == set(_BOTH)
    assert got[0].is_contiguous(memory_format=torch.channels_last)
    accuracy.assert_close(got, accuracy.reference_call(conv, x, w, grad), reduce_size=60)


@pytest.mark.parametrize(
    ("signal", "filters", "stride", "padding", "dilation", "groups"),
    [
        pytest.param((2, 4, 11), (6, 3), 1, 1, 1, 1, id="whisper-conv1"),
        pytest.param((2, 6, 16), (6, 3), 2, 1, 1, 1, id="whisper-conv2-stride2"),
        pytest.param((1, 6, 9), (6, 3), 1, 2, 2, 3, id="dilated-groups"),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv1d_is_the_conv2d_of_height_one(
    signal: tuple[int, int, int],
    filters: tuple[int, int],
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    dtype: torch.dtype,
) -> None:
    """Whisper's encoder: 1-D convolutions over mel frames, forward and backward on gems."""
    out_channels, kernel = filters
    x = accuracy.make_tensor(signal, dtype)
    w = accuracy.make_tensor((out_channels, signal[1] // groups, kernel), dtype, low=-1, high=1)
    b = accuracy.make_tensor((out_channels,), dtype)

    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv1d(x, w, b, stride, padding, dilation, groups)

    grad = accuracy.make_tensor(conv(x, w, b).shape, dtype)
    accuracy.check_op(
        accuracy.with_gradients(conv), x, w, b, grad, overloads=_BOTH,
        reduce_size=max(w.shape[1] * kernel, signal[0] * signal[2]),
    )  # fmt: skip


def test_only_the_gradients_asked_for() -> None:
    x, w, _ = _operands((1, 2, 4, 4), (3, 3), 1, torch.float32)
    grad = accuracy.make_tensor((1, 3, 2, 2), torch.float32)
    with gems_kernels.use_gems(include=["convolution_backward"]):
        got = torch.ops.aten.convolution_backward(
            grad, x, w, None, [1], [0], [1], False, [0], 1, [False, True, False]
        )
    assert got[0] is None and got[2] is None
    expected = torch.ops.aten.convolution_backward(
        grad.double(), x.double(), w.double(), None, [1], [0], [1], False, [0], 1,
        [False, True, False],
    )[1]  # fmt: skip
    accuracy.assert_close(got[1], expected, reduce_size=4)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda x, w: F.conv_transpose2d(x, w), id="transposed"),
        pytest.param(lambda x, w: F.conv2d(x.double(), w.double()), id="float64"),
    ],
)
def test_other_convolutions_fall_through_to_aten(call: object) -> None:
    x, w, _ = _operands((1, 3, 5, 5), (3, 3), 1, torch.float32)
    expected = call(x, w)  # type: ignore[operator]
    with gems_kernels.use_gems(include=_BOTH, record=True) as session:
        got = call(x, w)  # type: ignore[operator]
    assert session.recorder is not None and not session.recorder.seen
    torch.testing.assert_close(got, expected)


def test_bad_shapes_raise_atens_error() -> None:
    x, w, _ = _operands((1, 3, 5, 5), (4, 3), 1, torch.float32)
    with pytest.raises(RuntimeError) as native:
        F.conv2d(x, w[:, :2])
    with gems_kernels.use_gems(include=_BOTH), pytest.raises(RuntimeError) as gems:
        F.conv2d(x, w[:, :2])
    assert str(gems.value) == str(native.value)
