"""Benchmark cases of the vision ops at ResNet/MobileNet shapes (tiny shapes for ``--smoke``):
convolution (3x3, depthwise, 1x1, the ViT patch embedding), batch norm, pooling and the hard
activations, forward and forward+backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from gems_kernels import accuracy
from harness import Case

__all__ = ["vision_cases"]

_DTYPES = (torch.bfloat16, torch.float32)
_CONV = ["convolution", "convolution_backward"]


def _conv_inputs(groups: int) -> Callable[[tuple[int, ...], torch.dtype], tuple[Any, ...]]:
    """(N, C, H, W, K, kernel): an image, weights and a bias."""

    def make(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[Any, ...]:
        n, c, h, w, k, kernel = shape
        return (
            accuracy.make_tensor((n, c, h, w), dtype),
            accuracy.make_tensor((k, c // groups, kernel, kernel), dtype, low=-0.2, high=0.2),
            accuracy.make_tensor((k,), dtype),
        )

    return make


def _image(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor]:
    return (accuracy.make_tensor(shape, dtype),)


def _bn_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    channels = shape[1]
    return (
        accuracy.make_tensor(shape, dtype),
        accuracy.make_tensor((channels,), torch.float32),
        accuracy.make_tensor((channels,), torch.float32),
    )


def _leaves(make: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
    def inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[Any, ...]:
        return tuple(t.requires_grad_() for t in make(shape, dtype))

    return inputs


def _fwd_bwd(fn: Callable[..., torch.Tensor]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The output and the gradients of every input, for a gradient of ones."""

    def step(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = fn(*inputs)
        return (out.detach(), *torch.autograd.grad(out, inputs, torch.ones_like(out)))

    return step


def _conv(stride: int, padding: int, groups: int) -> Callable[..., torch.Tensor]:
    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, b, stride, padding, 1, groups)

    return conv


def _batch_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, None, None, w, b, training=True)


def _conv_flops(groups: int, stride: int, passes: float) -> Callable[[tuple[int, ...]], float]:
    def flops(shape: tuple[int, ...]) -> float:
        n, c, h, w, k, kernel = shape
        return 2.0 * n * (h // stride) * (w // stride) * k * (c // groups) * kernel**2 * passes

    return flops


def vision_cases(smoke: bool) -> list[Case]:
    """The vision ops, bfloat16 and float32."""
    conv3 = (2, 8, 12, 12, 8, 3) if smoke else (32, 64, 56, 56, 64, 3)
    depthwise = (2, 8, 12, 12, 8, 3) if smoke else (32, 384, 28, 28, 384, 3)
    pointwise = (2, 8, 12, 12, 16, 1) if smoke else (32, 64, 56, 56, 256, 1)
    patch = (2, 3, 16, 16, 8, 4) if smoke else (64, 3, 224, 224, 768, 16)
    image = (2, 8, 12, 12) if smoke else (32, 64, 112, 112)
    cases: list[Case] = []
    for dtype in _DTYPES:
        cases += [
            Case("conv2d_3x3", dtype, conv3, _conv_inputs(1), _conv(1, 1, 1), _CONV[:1],
                 flops=_conv_flops(1, 1, 1.0)),
            Case("conv2d_3x3_fwd_bwd", dtype, conv3, _leaves(_conv_inputs(1)),
                 _fwd_bwd(_conv(1, 1, 1)), _CONV, flops=_conv_flops(1, 1, 3.0)),
            Case("conv2d_depthwise_fwd_bwd", dtype, depthwise, _leaves(_conv_inputs(depthwise[1])),
                 _fwd_bwd(_conv(1, 1, depthwise[1])), _CONV,
                 flops=_conv_flops(depthwise[1], 1, 3.0)),
            Case("conv2d_1x1_fwd_bwd", dtype, pointwise, _leaves(_conv_inputs(1)),
                 _fwd_bwd(_conv(1, 0, 1)), _CONV, flops=_conv_flops(1, 1, 3.0)),
            Case("conv2d_patch_embedding", dtype, patch, _conv_inputs(1), _conv(patch[-1], 0, 1),
                 _CONV[:1], flops=_conv_flops(1, patch[-1], 1.0)),
            Case("batch_norm_fwd_bwd", dtype, image, _leaves(_bn_inputs), _fwd_bwd(_batch_norm),
                 ["native_batch_norm", "native_batch_norm_backward"]),
            Case("max_pool2d_fwd_bwd", dtype, image, _leaves(_image),
                 _fwd_bwd(lambda x: F.max_pool2d(x, 3, 2, 1)),
                 ["max_pool2d_with_indices", "max_pool2d_with_indices_backward"]),
            Case("avg_pool2d_fwd_bwd", dtype, image, _leaves(_image),
                 _fwd_bwd(lambda x: F.avg_pool2d(x, 2)), ["avg_pool2d", "avg_pool2d_backward"]),
            Case("adaptive_avg_pool2d_fwd_bwd", dtype, image, _leaves(_image),
                 _fwd_bwd(lambda x: F.adaptive_avg_pool2d(x, 7)),
                 ["_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"]),
            Case("hardswish_fwd_bwd", dtype, image, _leaves(_image), _fwd_bwd(F.hardswish),
                 ["hardswish", "hardswish_backward"]),
            Case("relu6_fwd_bwd", dtype, image, _leaves(_image), _fwd_bwd(F.relu6),
                 ["hardtanh", "hardtanh_backward"]),
        ]  # fmt: skip
    return cases
