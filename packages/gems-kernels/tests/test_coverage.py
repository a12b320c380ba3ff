"""The coverage trace on a convolution model: an op counts as native when its kernel does the
work, whatever its dispatch key (issue 27)."""

from __future__ import annotations

import torch
from gems_kernels import host
from gems_kernels.coverage import NativeOpTrace
from torch import nn


def _conv_step(trace: NativeOpTrace) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3, stride=2, groups=2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 5),
    )
    x = torch.randn(2, 3, 8, 8)
    with trace, torch.autograd.profiler.record_function("step"):
        model(x).sum().backward()


def test_conv_model_counts_the_convolutions_as_native() -> None:
    """On the CPU, convolution, mkldnn_convolution and convolution_backward have composite
    kernels only; the last two call oneDNN themselves, so they ran on ATen, natively."""
    trace = NativeOpTrace(entries={})  # no gems entries: everything computing is native
    _conv_step(trace)
    assert trace.native["convolution_backward.default"] == 2, trace.native
    assert trace.native["mkldnn_convolution.default"] == 2, trace.native
    assert "convolution_backward.default" not in trace.composite
    # convolution itself only calls _convolution, which calls mkldnn_convolution: composites
    assert trace.composite["convolution.default"] == 2


def test_metadata_ops_are_not_work() -> None:
    """as_strided_ (resizing an output), _nnpack_available and the profiler markers compute
    nothing: metadata, neither native nor composite."""
    trace = NativeOpTrace(entries={})
    _conv_step(trace)
    with trace:
        torch.ops.aten._nnpack_available()
    for name in (
        "as_strided_.default",
        "_nnpack_available.default",
        "_record_function_enter_new.default",
        "_record_function_exit._RecordFunction",
    ):
        assert name not in trace.native and name not in trace.composite, name
        assert trace.metadata[name] >= 1, name


def test_a_composite_that_decomposes_stays_composite() -> None:
    """ones_like decomposes into empty_like and fill_: composite, and fill_ is counted."""
    trace = NativeOpTrace(entries={})
    with trace:
        torch.ones_like(torch.zeros(3))
    assert trace.composite["ones_like.default"] == 1
    assert trace.native["fill_.Scalar"] == 1


def test_host_code_computing_on_aten_is_counted() -> None:
    """Inside a gems kernel's host code every registered op falls through to ATen: a sum there
    is ATen's work (``host``), while a copy of a tensor onto its own elements (the interpreter
    writing a launch's arguments back) computes nothing (``metadata``)."""
    x = torch.ones(3, 4)
    trace = NativeOpTrace()
    with trace:
        previous = host.enter()
        try:
            x.sum(0)
            x.copy_(x.view(3, 4))
            torch.empty(3, 4).copy_(x)
        finally:
            host.leave(previous)
    assert dict(trace.host) == {"sum.dim_IntList": 1, "copy_.default": 1}
    assert trace.metadata["copy_.default"] == 1


def test_attention_with_dropout_runs_on_gems() -> None:
    """SDPA's math path (dropout on, as in Hugging Face models trained with attention dropout)
    calls ``_safe_softmax``, whose kernel finds the fully masked rows with ``isneginf`` (ATen's
    before issue 39's re-check) and calls ``softmax.int`` below autograd (an implicit composite the
    trace counted as native though it runs as gems' ``_softmax``)."""
    import gems_kernels

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 4, requires_grad=True) for _ in range(3))
    mask = torch.zeros(2, 1, 8, 8)
    mask[0, ..., 4:] = float("-inf")
    with gems_kernels.use_gems(), NativeOpTrace() as trace:
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1)
        out.sum().backward()
    assert dict(trace.native) == {}
    assert trace.gems["isneginf.default"] == 1 and trace.gems["_softmax.default"] == 1
    assert trace.composite["softmax.int"] == 1
