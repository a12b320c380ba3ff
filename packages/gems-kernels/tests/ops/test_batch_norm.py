"""Batch norm forward and backward, training and evaluation, against float64 ATen; running
statistics updated as ATen updates them."""

from __future__ import annotations

from collections.abc import Callable

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

_BOTH = ["native_batch_norm", "native_batch_norm_backward"]
SHAPES = [
    pytest.param((4, 3, 5, 6), id="2d"),
    pytest.param((7, 5), id="1d-features"),
    pytest.param((3, 4, 9), id="1d-sequence"),
    pytest.param((2, 3, 2, 3, 2), id="3d"),
]


def _params(channels: int, dtype: torch.dtype) -> list[torch.Tensor]:
    """weight, bias, running_mean, running_var."""
    return [
        accuracy.make_tensor((channels,), dtype),
        accuracy.make_tensor((channels,), dtype),
        accuracy.make_tensor((channels,), dtype),
        accuracy.make_tensor((channels,), dtype, low=0.5, high=2.0),
    ]


_T = torch.Tensor


def _step(training: bool, momentum: float = 0.1) -> Callable[..., tuple[_T, ...]]:
    """Output, input/weight/bias gradients and the running statistics after the call."""

    def run(x: _T, w: _T, b: _T, mean: _T, var: _T, grad: _T) -> tuple[_T, ...]:
        mean, var = mean.clone(), var.clone()
        out = accuracy.with_gradients(
            lambda x, w, b: F.batch_norm(x, mean, var, w, b, training, momentum, 1e-5)
        )(x, w, b, grad)
        return (*out, mean, var)

    return run


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", SHAPES)
def test_float32(shape: tuple[int, ...], training: bool) -> None:
    x = accuracy.make_tensor(shape, torch.float32) * 2 + 1
    grad = accuracy.make_tensor(shape, torch.float32)
    count = x.numel() // shape[1]
    accuracy.check_op(
        _step(training), x, *_params(shape[1], torch.float32), grad, overloads=_BOTH,
        reduce_size=count,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype: torch.dtype) -> None:
    shape = (3, 4, 5, 3)
    x, grad = accuracy.make_tensor(shape, dtype), accuracy.make_tensor(shape, dtype)
    accuracy.check_op(_step(True), x, *_params(4, dtype), grad, overloads=_BOTH, reduce_size=45)


def test_half_input_with_float32_parameters() -> None:
    """Autocast's case: bfloat16 activations, float32 parameters and statistics."""
    shape = (2, 3, 4, 4)
    x = accuracy.make_tensor(shape, torch.bfloat16)
    params = _params(3, torch.float32)
    a = torch.ops.aten
    with gems_kernels.use_gems(include=_BOTH, record=True) as session:
        out, mean, invstd = a.native_batch_norm(x, *params, True, 0.1, 1e-5)
    native = a.native_batch_norm(x, *_params(3, torch.float32), True, 0.1, 1e-5)
    assert session.recorder is not None and "native_batch_norm" in session.recorder.seen
    assert (out.dtype, mean.dtype, invstd.dtype) == (native[0].dtype, torch.float32, torch.float32)
    expected = a.native_batch_norm(x.double(), *(p.double() for p in params), True, 0.1, 1e-5)
    accuracy.assert_close(out, expected[0])


def test_cumulative_average_and_no_affine() -> None:
    """momentum=None (a running average over batches, as BatchNorm2d(momentum=None)) and no
    weight or bias."""
    x = accuracy.make_tensor((3, 2, 4, 5), torch.float32)
    grad = accuracy.make_tensor((3, 2, 4, 5), torch.float32)

    def run(x: _T, mean: _T, var: _T, grad: _T) -> tuple[_T, ...]:
        mean, var = mean.clone(), var.clone()
        out = accuracy.with_gradients(
            lambda x: F.batch_norm(x, mean, var, None, None, True, 1 / 3, 1e-3)
        )(x, grad)
        return (*out, mean, var)

    _, _, mean, var = _params(2, torch.float32)
    accuracy.check_op(run, x, mean, var, grad, overloads=_BOTH, reduce_size=60)


def test_channels_last() -> None:
    x = accuracy.make_tensor((2, 3, 4, 5), torch.float32).to(memory_format=torch.channels_last)
    grad = accuracy.make_tensor((2, 3, 4, 5), torch.float32)
    step = _step(True)
    params = _params(3, torch.float32)
    with gems_kernels.use_gems(include=_BOTH, record=True) as session:
        got = step(x, *params, grad)
    assert session.recorder is not None and session.recorder.seen == set(_BOTH)
    accuracy.assert_close(got, accuracy.reference_call(step, x, *params, grad), reduce_size=40)


def test_module_running_statistics_over_steps() -> None:
    """Three training steps of nn.BatchNorm2d, then evaluation: buffers as in float64."""
    gems, reference = torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).double()
    inputs = [accuracy.make_tensor((2, 3, 3, 4), torch.float32) for _ in range(3)]
    with gems_kernels.use_gems(include=_BOTH):
        for x in inputs:
            gems(x).sum().backward()
        gems.eval()
        evaluated = gems(inputs[0])
    for x in inputs:
        reference(x.double())
    reference.eval()
    accuracy.assert_close(evaluated, reference(inputs[0].double()))
    accuracy.assert_close(gems.running_mean, reference.running_mean)
    accuracy.assert_close(gems.running_var, reference.running_var)
    assert int(gems.num_batches_tracked) == 3


def test_float64_and_empty_fall_through_to_aten() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    with gems_kernels.use_gems(include=_BOTH, record=True) as session:
        F.batch_norm(x, None, None, training=True)
        F.batch_norm(torch.empty(0, 3), torch.zeros(3), torch.ones(3))
    assert session.recorder is not None and not session.recorder.seen
