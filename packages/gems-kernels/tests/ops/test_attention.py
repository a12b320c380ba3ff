"""scaled_dot_product_attention forward and gradients against the float64 ATen reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy, ops, use_gems
from gems_kernels.coverage import NativeOpTrace

OVERLOAD = "scaled_dot_product_attention"


def _attention_with_gradients(
    mask_grad: bool = False, **options: Any
) -> Callable[..., tuple[torch.Tensor, ...]]:
    """(out, grad_query, grad_key, grad_value[, grad_mask]) of SDPA for an upstream gradient;
    the mask is a leaf too when ``mask_grad``."""

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
            grad: torch.Tensor) -> tuple[torch.Tensor, ...]:  # fmt: skip
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        if mask_grad and mask is not None:
            mask = mask.detach().requires_grad_()
            leaves.append(mask)
        out = F.scaled_dot_product_attention(*leaves[:3], attn_mask=mask, **options)
        out.backward(grad)
        return (out.detach(), *(leaf.grad for leaf in leaves))

    return run


def _mask(kind: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    """None, a random bool mask, or an additive one (of ``dtype``, or float32 for
    ``additive-float32``); ``*-empty-row`` variants leave query row 1 with no key (ATen gives
    zeros there)."""
    if kind == "none":
        return None
    keep = torch.rand(shape) < 0.6
    keep[..., :, 0] = True
    if kind.endswith("empty-row"):
        keep[..., 1, :] = False
    if kind.startswith("bool"):
        return keep.to(accuracy.device())
    bias_dtype = torch.float32 if kind.endswith("float32") else dtype
    bias = accuracy.make_tensor(shape, bias_dtype, low=-2, high=2)
    return bias.masked_fill(~keep.to(bias.device), float("-inf"))


GQA_CAUSAL = {"enable_gqa": True, "is_causal": True}
MASK_GRAD = {"mask_grad": True}
# (query shape, key/value heads, key length, value dim, mask kind, mask shape, options)
CASES = [
    pytest.param((1, 2, 7, 24), 2, 33, 24, "none", None, {}, id="odd-lengths-dim24"),
    pytest.param((1, 1, 33, 16), 1, 33, 16, "none", None, {"is_causal": True}, id="causal"),
    pytest.param((1, 1, 33, 24), 1, 7, 24, "none", None, {"is_causal": True}, id="causal-L>S"),
    pytest.param((1, 1, 7, 16), 1, 33, 16, "none", None, {"is_causal": True}, id="causal-L<S"),
    pytest.param((3, 9, 16), 3, 5, 8, "none", None, {"scale": 0.2}, id="3d-scale-value-dim"),
    pytest.param((9, 12), 0, 17, 12, "none", None, {}, id="2d"),
    pytest.param((1, 4, 9, 16), 2, 5, 16, "none", None, {"enable_gqa": True}, id="gqa"),
    pytest.param((1, 3, 17, 8), 1, 17, 8, "none", None, GQA_CAUSAL, id="gqa-causal"),
    pytest.param((1, 2, 9, 16), 2, 18, 16, "bool", (9, 18), {}, id="bool-mask-LS"),
    pytest.param((2, 1, 9, 16), 1, 5, 16, "bool", (2, 1, 1, 5), {}, id="bool-mask-batch-keys"),
    pytest.param((1, 2, 9, 16), 2, 5, 16, "additive", (2, 9, 5), {}, id="add-mask-heads"),
    pytest.param((1, 4, 7, 16), 2, 5, 16, "additive", (7, 5), {"enable_gqa": True}, id="add-gqa"),
    pytest.param((1, 1, 6, 16), 1, 5, 16, "bool-empty-row", (6, 5), {}, id="bool-mask-empty-row"),
    pytest.param((1, 2, 6, 16), 2, 5, 16, "additive-empty-row", (2, 6, 5), {}, id="add-empty-row"),
    pytest.param((1, 2, 9, 16), 2, 5, 16, "additive-float32", (9, 5), {}, id="float32-mask"),
    pytest.param((2, 2, 9, 16), 2, 5, 16, "additive", (2, 9, 5), MASK_GRAD, id="add-mask-grad"),
    pytest.param(
        (1, 2, 6, 8), 2, 5, 8, "additive-empty-row", (6, 5), MASK_GRAD, id="mask-grad-row"
    ),
    pytest.param((1, 2, 0, 16), 2, 5, 16, "none", None, {}, id="no-queries"),
    pytest.param((1, 2, 4, 16), 2, 0, 16, "none", None, {}, id="no-keys"),
    pytest.param((0, 2, 4, 16), 2, 3, 16, "none", None, {"is_causal": True}, id="no-batch"),
]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _variants() -> list[Any]:
    """Every case in float32, every other case in bfloat16 or float16 too (full mode: all)."""
    params = []
    for index, case in enumerate(CASES):
        halves = [DTYPES[1 + index // 2 % 2]] if index % 2 == 0 else []
        dtypes = DTYPES if accuracy.is_full_mode() else [torch.float32, *halves]
        params += [
            pytest.param(*case.values, dtype, id=f"{case.id}-{dtype}".replace("torch.", ""))
            for dtype in dtypes
        ]
    return params


@pytest.mark.parametrize(
    ("shape", "kv_heads", "key_len", "value_dim", "mask_kind", "mask_shape", "options", "dtype"),
    _variants(),
)
def test_forward_and_gradients(
    shape: tuple[int, ...],
    kv_heads: int,
    key_len: int,
    value_dim: int,
    mask_kind: str,
    mask_shape: tuple[int, ...] | None,
    options: dict[str, Any],
    dtype: torch.dtype,
) -> None:
    *lead, query_len, head_dim = shape
    kv_lead = (*lead[:-1], kv_heads) if lead else ()
    q = accuracy.make_tensor(shape, dtype, low=-1, high=1)
    k = accuracy.make_tensor((*kv_lead, key_len, head_dim), dtype, low=-1, high=1)
    v = accuracy.make_tensor((*kv_lead, key_len, value_dim), dtype)
    mask = _mask(mask_kind, mask_shape or (), dtype)
    grad = accuracy.make_tensor((*shape[:-1], value_dim), dtype)
    group = shape[-3] // kv_heads if lead else 1
    accuracy.check_op(
        _attention_with_gradients(**options),
        q,
        k,
        v,
        mask,
        grad,
        overloads=[OVERLOAD],
        reduce_size=max(query_len * group, key_len, 1),
    )


def test_transposed_layout_is_read_in_place() -> None:
    """(B, L, H, D) projections transposed to (B, H, L, D), as attention modules make them."""
    q, k, v = (accuracy.make_tensor((2, 7, 2, 24), torch.float32, low=-1, high=1).transpose(1, 2)
               for _ in range(3))  # fmt: skip
    grad = accuracy.make_tensor((2, 7, 2, 24), torch.float32).transpose(1, 2)
    run = _attention_with_gradients(is_causal=True)
    with use_gems(include=[OVERLOAD], record=True) as session:
        actual = run(q, k, v, None, grad)
    assert session.recorder is not None and OVERLOAD in session.recorder.seen
    accuracy.assert_close(actual, accuracy.reference_call(run, q, k, v, None, grad), reduce_size=7)
    assert actual[0].transpose(1, 2).is_contiguous()  # the output keeps the (B, L, H, D) layout


def test_strided_inputs() -> None:
    """Inputs whose last dim is not contiguous (every other element of a wider buffer)."""
    q, k, v = (accuracy.non_contiguous(accuracy.make_tensor((1, 2, 9, 16), torch.float32,
               low=-1, high=1)) for _ in range(3))  # fmt: skip
    grad = accuracy.non_contiguous(accuracy.make_tensor((1, 2, 9, 16), torch.float32))
    mask = _mask("additive", (9, 9), torch.float32)
    assert not q.is_contiguous() and not grad.is_contiguous()
    accuracy.check_op(
        _attention_with_gradients(mask_grad=True), q, k, v, mask, grad,
        overloads=[OVERLOAD], reduce_size=9,
    )  # fmt: skip


@pytest.mark.parametrize("which", [0, 2], ids=["query-only", "value-only"])
def test_gradient_of_one_input(which: int) -> None:
    """Only the kernels for the gradients asked for run; the others stay None."""
    tensors = [accuracy.make_tensor((1, 2, 9, 16), torch.float32, low=-1, high=1) for _ in range(3)]
    grad = accuracy.make_tensor((1, 2, 9, 16), torch.float32)

    def run(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = [t.detach().requires_grad_(i == which) for i, t in enumerate(inputs)]
        out = F.scaled_dot_product_attention(*leaves, is_causal=True)
        out.backward(grad.to(out.dtype))
        assert all((leaf.grad is None) == (i != which) for i, leaf in enumerate(leaves))
        return out.detach(), leaves[which].grad

    with use_gems(include=[OVERLOAD], record=True) as session:
        actual = run(*tensors)
    assert session.recorder is not None and OVERLOAD in session.recorder.seen
    accuracy.assert_close(actual, accuracy.reference_call(run, *tensors), reduce_size=9)


def test_training_call_records_the_gems_backward() -> None:
    q = accuracy.make_tensor((1, 2, 5, 16), torch.float32).requires_grad_()
    with use_gems(include=[OVERLOAD]):
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert type(out.grad_fn).__name__ == "ScaledDotProductAttentionBackward"
    out.sum().backward()
    assert q.grad is not None and q.grad.shape == q.shape


def test_direct_call_checks_heads() -> None:
    q, kv = torch.zeros(1, 4, 3, 16), torch.zeros(1, 3, 3, 16)
    with pytest.raises(RuntimeError, match="key: 3 heads must equal the query's 4"):
        ops.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
    with pytest.raises(RuntimeError, match="or divide them with enable_gqa=True"):
        ops.scaled_dot_product_attention(q, kv[:, :2], kv[:, :2])


def _dropout(q: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)


def _mask_and_causal(q: torch.Tensor) -> torch.Tensor:
    keep = torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool)
    return F.scaled_dot_product_attention(q, q, q, attn_mask=keep, is_causal=True)


def _broadcast_batch(q: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, q[:1], q[:1])


def _float64(q: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q.double(), q.double(), q.double())


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(_dropout, id="dropout"),
        pytest.param(_mask_and_causal, id="mask-and-causal"),
        pytest.param(_broadcast_batch, id="broadcast-batch"),
        pytest.param(_float64, id="float64"),
    ],
)
def test_unsupported_calls_fall_back_to_aten(call: Callable[[torch.Tensor], torch.Tensor]) -> None:
    q = accuracy.make_tensor((2, 2, 5, 8), torch.float32)
    with use_gems(include=[OVERLOAD], record=True) as session:
        out = call(q)
    assert session.recorder is not None and not session.recorder.seen
    assert out.shape == (2, 2, 5, 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_position_bias_gradient_computes_on_gems(dtype: torch.dtype) -> None:
    """T5's and Swin's relative position bias, (1, H, L, S) added to every batch's scores: its
    gradient is summed over the batch, and that sum (and the zeroed float32 buffer before it)
    ran on ATen inside the backward's host code before."""
    q, k, v = (accuracy.make_tensor((2, 3, 5, 8), dtype, low=-1, high=1) for _ in range(3))
    bias = accuracy.make_tensor((1, 3, 5, 5), dtype)
    grad = accuracy.make_tensor((2, 3, 5, 8), dtype)
    run = _attention_with_gradients(mask_grad=True)
    with use_gems(), NativeOpTrace() as trace:
        run(q, k, v, bias, grad)
    assert dict(trace.host) == {} and dict(trace.native) == {}
    accuracy.check_op(run, q, k, v, bias, grad, overloads=[OVERLOAD], reduce_size=10)
