"""The core set of benchmark cases at standard shapes (and tiny shapes for ``--smoke``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from gems_kernels import accuracy, fused
from harness import Case

__all__ = ["core_cases", "fused_cases"]

HALF_AND_FLOAT = (torch.bfloat16, torch.float32)
ATTENTION_DTYPES = (torch.bfloat16,)


def _tensors(count: int, **bounds: float) -> Callable[[tuple[int, ...], torch.dtype], tuple]:
    def make(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        return tuple(accuracy.make_tensor(shape, dtype, **bounds) for _ in range(count))

    return make


def _norm_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    x = accuracy.make_tensor(shape, dtype)
    return x, accuracy.make_tensor(shape[-1:], dtype), accuracy.make_tensor(shape[-1:], dtype)


def _rms_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return accuracy.make_tensor(shape, dtype), accuracy.make_tensor(shape[-1:], dtype)


def _loss_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    scores = accuracy.make_tensor(shape, dtype)
    return scores, accuracy.make_tensor(shape[:1], torch.int64, low=0, high=shape[1] - 1)


def _mm_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    m, k, n = shape
    return (accuracy.make_tensor((m, k), dtype, low=-1, high=1),
            accuracy.make_tensor((k, n), dtype, low=-1, high=1))  # fmt: skip


def _embedding_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    vocab, dim, tokens = shape
    return (accuracy.make_tensor((tokens,), torch.int64, low=0, high=vocab - 1),
            accuracy.make_tensor((vocab, dim), dtype))  # fmt: skip


def _gate_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return (accuracy.make_tensor(shape, dtype),)


def _swiglu_reference(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b


def _with_grad(make: Callable[[tuple[int, ...], torch.dtype], tuple]) -> Callable[..., tuple]:
    """Inputs of ``make`` as leaves requiring grad, plus an upstream gradient of x's shape."""

    def inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[Any, ...]:
        tensors = [t.requires_grad_() if t.is_floating_point() else t for t in make(shape, dtype)]
        return (*tensors, accuracy.make_tensor(tensors[0].shape, dtype))

    return inputs


def _forward_backward(fn: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    """One training step of ``fn``: forward, then gradients of every input needing one."""

    def step(*args: Any) -> tuple[torch.Tensor, ...]:
        *inputs, grad = args
        out = fn(*inputs)
        leaves = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        upstream = grad if out.shape == grad.shape else torch.ones_like(out)
        return (out.detach(), *torch.autograd.grad(out, leaves, upstream))

    return step


def _training_cases(dtype: torch.dtype, rows: tuple[int, ...],
                    vocab: tuple[int, ...]) -> list[Case]:  # fmt: skip
    """Forward plus backward of the ops the issue sets targets for."""
    return [
        Case("softmax_fwd_bwd", dtype, rows, _with_grad(_tensors(1)),
             _forward_backward(lambda x: torch.softmax(x, -1)),
             ["_softmax", "_softmax_backward_data"]),
        Case("layer_norm_fwd_bwd", dtype, rows, _with_grad(_norm_inputs),
             _forward_backward(lambda x, w, b: F.layer_norm(x, w.shape, w, b)),
             ["native_layer_norm", "native_layer_norm_backward"]),
        Case("rms_norm_fwd_bwd", dtype, rows, _with_grad(_rms_inputs),
             _forward_backward(lambda x, w: F.rms_norm(x, w.shape, w, 1e-6)), ["rms_norm"]),
        Case("cross_entropy_fwd_bwd", dtype, vocab, _with_grad(_loss_inputs),
             _forward_backward(F.cross_entropy), ["cross_entropy_loss"]),
        Case("silu_and_mul_fwd_bwd", dtype, rows, _with_grad(_gate_inputs),
             _forward_backward(_swiglu_reference),
             gems=_forward_backward(fused.silu_and_mul)),
    ]  # fmt: skip


# Indexing: row gathers, accumulating index_put (the backward of x[idx]) and scatter_add.


def _rows_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """A (rows, dim) table and ``picks`` random row positions (with duplicates)."""
    rows, dim, picks = shape
    return (accuracy.make_tensor((rows, dim), dtype),
            accuracy.make_tensor((picks,), torch.int64, low=0, high=rows - 1))  # fmt: skip


def _put_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    table, positions = _rows_inputs(shape, dtype)
    return table, positions, accuracy.make_tensor((shape[2], shape[1]), dtype)


def _scatter_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """self (rows, dim), an index (picks, dim) into its rows and a src of the index's shape."""
    rows, dim, picks = shape
    return (accuracy.make_tensor((rows, dim), dtype),
            accuracy.make_tensor((picks, dim), torch.int64, low=0, high=rows - 1),
            accuracy.make_tensor((picks, dim), dtype))  # fmt: skip


def _touched_bytes(inputs: tuple[Any, ...], output: Any) -> float:
    """Rows read or written once per index position, plus the index: not the whole table."""
    rows = inputs[0]
    picked = inputs[1].shape[0] * rows.shape[1] * rows.element_size()
    return 2.0 * picked + inputs[1].numel() * inputs[1].element_size()


def _indexing_cases(smoke: bool) -> list[Case]:
    rows = (64, 16, 16) if smoke else (65536, 1024, 16384)
    scatter = (16, 16, 32) if smoke else (4096, 1024, 16384)
    cases = []
    for dtype in HALF_AND_FLOAT:
        cases += [
            Case("index_rows", dtype, rows, _rows_inputs, lambda x, i: x[i], ["index"],
                 bytes_moved=_touched_bytes),
            Case("index_put_accumulate", dtype, rows, _put_inputs,
                 lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
                 ["_index_put_impl_"]),
            Case("scatter_add", dtype, scatter, _scatter_inputs,
                 lambda x, i, s: torch.scatter_add(x, 0, i, s), ["scatter_add"]),
        ]  # fmt: skip
    return cases


def _causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _attention_flops(passes: float) -> Callable[[tuple[int, ...]], float]:
    """Matmul FLOPs of causal attention on (B, H, L, D) inputs: 4*B*H*L*L*D / 2 forward;
    ``passes`` 3.5 counts the backward as 2.5 forwards (the flash-attention convention)."""

    def flops(shape: tuple[int, ...]) -> float:
        batch, heads, length, dim = shape
        return 2.0 * batch * heads * length * length * dim * passes

    return flops


def _attention_cases(dtype: torch.dtype, shape: tuple[int, ...]) -> list[Case]:
    """Causal scaled_dot_product_attention, forward and forward+backward (half precision)."""
    if dtype not in ATTENTION_DTYPES:
        return []
    inputs = _tensors(3, low=-1, high=1)
    return [
        Case("attention", dtype, shape, inputs, _causal_attention,
             ["scaled_dot_product_attention"], flops=_attention_flops(1.0)),
        Case("attention_fwd_bwd", dtype, shape, _with_grad(inputs),
             _forward_backward(_causal_attention), ["scaled_dot_product_attention"],
             flops=_attention_flops(3.5)),
    ]  # fmt: skip


def core_cases(smoke: bool) -> list[Case]:
    """Pointwise, reductions, softmax, norms, loss, matmul, embedding, fused ops, attention and
    indexing."""
    big = (64, 96) if smoke else (8192, 8192)
    rows = (16, 96) if smoke else (8192, 4096)
    vocab = (8, 40) if smoke else (8192, 32768)
    mm = (32, 32, 32) if smoke else (4096, 4096, 4096)
    attention = (1, 2, 40, 16) if smoke else (4, 16, 2048, 128)
    tiny = (1,)
    cases: list[Any] = _indexing_cases(smoke)
    for dtype in HALF_AND_FLOAT:
        cases += [
            Case("add", dtype, big, _tensors(2), torch.add, ["add"], tiny_shape=tiny),
            Case("mul", dtype, big, _tensors(2), torch.mul, ["mul"], tiny_shape=tiny),
            Case("exp", dtype, big, _tensors(1), torch.exp, ["exp"]),
            Case("relu", dtype, big, _tensors(1), torch.relu, ["relu"]),
            Case("gelu", dtype, big, _tensors(1), F.gelu, ["gelu"]),
            Case("silu", dtype, big, _tensors(1), F.silu, ["silu"]),
            Case("where", dtype, big, _tensors(2),
                 lambda a, b: torch.where(a > 0, a, b), ["where", "gt"]),
            Case("sum", dtype, big, _tensors(1), lambda x: x.sum(-1), ["sum"]),
            Case("mean", dtype, big, _tensors(1), lambda x: x.mean(-1), ["mean"]),
            Case("amax", dtype, big, _tensors(1), lambda x: x.amax(-1), ["amax"]),
            Case("argmax", dtype, big, _tensors(1), lambda x: x.argmax(-1), ["argmax"]),
            Case("softmax", dtype, rows, _tensors(1), lambda x: torch.softmax(x, -1),
                 ["_softmax"], tiny_shape=(1, 1)),
            Case("log_softmax", dtype, rows, _tensors(1), lambda x: torch.log_softmax(x, -1),
                 ["_log_softmax"]),
            Case("layer_norm", dtype, rows, _norm_inputs,
                 lambda x, w, b: F.layer_norm(x, w.shape, w, b), ["native_layer_norm"],
                 tiny_shape=(1, 1)),
            Case("rms_norm", dtype, rows, _rms_inputs,
                 lambda x, w: F.rms_norm(x, w.shape, w, 1e-6), ["rms_norm"]),
            Case("cross_entropy", dtype, vocab, _loss_inputs, F.cross_entropy,
                 ["cross_entropy_loss"]),
            Case("mm", dtype, mm, _mm_inputs, torch.mm, ["mm"],
                 flops=lambda s: 2.0 * s[0] * s[1] * s[2]),
            Case("embedding", dtype, (50000, 1024, 8192) if not smoke else (50, 16, 20),
                 _embedding_inputs, F.embedding, ["embedding"]),
            Case("silu_and_mul", dtype, rows, _gate_inputs, _swiglu_reference,
                 gems=fused.silu_and_mul),
            *_training_cases(dtype, rows, vocab),
            *_attention_cases(dtype, attention),
        ]  # fmt: skip
    return cases


def _rotary_inputs(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """q (batch, seq, heads, dim), k with a quarter of the heads, cos and sin (seq, 1, dim/2)."""
    batch, seq, heads, dim = shape
    angles = accuracy.make_tensor((seq, 1, dim // 2), torch.float32)
    return (accuracy.make_tensor(shape, dtype),
            accuracy.make_tensor((batch, seq, max(1, heads // 4), dim), dtype),
            angles.cos().to(dtype), angles.sin().to(dtype))  # fmt: skip


def _rotate_halves(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def _rotary_reference(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                      sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    return _rotate_halves(q, cos, sin), _rotate_halves(k, cos, sin)


def _rotary_gems(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                 sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    return fused.rotary_embedding(q, cos, sin), fused.rotary_embedding(k, cos, sin)


def _geglu_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(a, approximate="tanh") * b


def _geglu_gems(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return fused.gelu_and_mul(a, b, approximate="tanh")


def fused_cases(smoke: bool) -> list[Case]:
    """gelu_and_mul (tanh, the form liger-kernel has) and rotary embedding of q and k."""
    rows = (16, 96) if smoke else (8192, 4096)
    rotary = (2, 8, 4, 16) if smoke else (4, 4096, 32, 128)
    cases: list[Case] = []
    for dtype in HALF_AND_FLOAT:
        cases += [
            Case("gelu_and_mul", dtype, rows, _tensors(2), _geglu_reference, gems=_geglu_gems),
            Case("gelu_and_mul_fwd_bwd", dtype, rows, _with_grad(_tensors(2)),
                 _forward_backward(_geglu_reference), gems=_forward_backward(_geglu_gems)),
            Case("rotary_embedding", dtype, rotary, _rotary_inputs, _rotary_reference,
                 gems=_rotary_gems),
        ]  # fmt: skip
    return cases
