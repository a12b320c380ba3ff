"""Matrix products: mm, bmm, addmm, mv (and so linear), one tiled ``tl.dot`` kernel.

Operands are read through their strides, so transposed weights (``linear``) need no copy.
float32 inputs use IEEE-precision products unless PyTorch allows TF32 for matmuls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import torch
import triton
import triton.language as tl

from gems_kernels import caches
from gems_kernels.backends import current_vendor, tuning
from gems_kernels.ops.registering import Registration, entries
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "addmm",
    "addmm_",
    "addmm_out",
    "baddbmm",
    "baddbmm_",
    "bmm",
    "bmm_out",
    "dot_precision",
    "is_matmul_dtype",
    "mm",
    "mm_out",
    "mv",
]


@triton.jit
def _matmul_kernel(
    a, b, c, bias, M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_bias_b, stride_bias_m, stride_bias_n, alpha, beta,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    blocks_n = tl.cdiv(N, BLOCK_N)
    rows = (pid // blocks_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid % blocks_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    inner = tl.arange(0, BLOCK_K)
    a_base = a + batch * stride_ab + rows.to(tl.int64)[:, None] * stride_am
    b_base = b + batch * stride_bb + cols.to(tl.int64)[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + inner
        a_tile = tl.load(
            a_base + ks[None, :] * stride_ak,
            mask=(rows[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b_tile = tl.load(
            b_base + ks[:, None] * stride_bk,
            mask=(ks[:, None] < K) & (cols[None, :] < N),
            other=0.0,
        )
        if UPCAST:
            a_tile, b_tile = a_tile.to(tl.float32), b_tile.to(tl.float32)
        acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
    acc = acc * alpha
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    if HAS_BIAS:
        offsets = (
            batch * stride_bias_b + rows[:, None] * stride_bias_m + cols[None, :] * stride_bias_n
        )
        acc += beta * tl.load(bias + offsets, mask=mask, other=0.0).to(tl.float32)
    out = c + batch * stride_cb + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn
    store(out, acc, mask=mask)


_MATMUL_DTYPES: Final = frozenset((torch.float16, torch.bfloat16, torch.float32))


def is_matmul_dtype(*args: Any, **kwargs: Any) -> bool:
    """Condition: every tensor operand is float16, bfloat16 or float32, all the same."""
    dtype = None
    for arg in args:
        if isinstance(arg, torch.Tensor):
            if dtype is None:
                dtype = arg.dtype
            elif arg.dtype != dtype:
                return False
    return dtype in _MATMUL_DTYPES


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps) tried once per shape bucket on a GPU; the choice is
# stored under GEMS_CACHE_DIR, so later processes reuse it without measuring.
_GPU_CANDIDATES: Final = ((64, 64, 32, 4), (128, 64, 32, 4), (64, 128, 32, 4), (128, 128, 32, 8))


# Block choices per vendor, (M, N, K) bucket and dtype, once looked up in this process.
_BLOCKS: dict[tuple[str, int, int, int, torch.dtype], tuple[int, int, int, int]] = {}


def _blocks(
    m: int, n: int, k: int, dtype: torch.dtype, measure: Callable[[tuple[int, ...]], float]
) -> tuple[int, int, int, int]:
    bucket = (tuning.next_power_of_2(m), tuning.next_power_of_2(n), tuning.next_power_of_2(k))
    vendor = current_vendor().name
    key = (vendor, *bucket, dtype)
    known = _BLOCKS.get(key)
    if known is not None:
        return known
    if vendor == "cpu":
        # The interpreter runs each program in Python: few, large tiles are fastest.
        size = 16 if max(m, n) <= 16 else 32
        choice: tuple[int, int, int, int] = (size, size, 32, 1)
    else:
        name = "x".join(str(b) for b in bucket)
        device = f"{torch.cuda.get_device_name()}:{name}:{dtype}"
        source = getattr(_matmul_kernel, "src", "_matmul_kernel")
        choice = caches.tuned(source, device, list(_GPU_CANDIDATES), measure)
    _BLOCKS[key] = choice
    return choice


def _measure(launch: Callable[[tuple[int, ...]], None]) -> Callable[[tuple[int, ...]], float]:
    def measure(config: tuple[int, ...]) -> float:
        import triton.testing

        try:
            return float(triton.testing.do_bench(lambda: launch(config), warmup=5, rep=20))
        except Exception:  # a config the device cannot run (e.g. shared memory) never wins
            return math.inf

    return measure


def dot_precision(dtype: torch.dtype) -> str:
    """``tl.dot``'s input precision: IEEE for float32 unless PyTorch allows TF32 matmuls."""
    # The flag behind torch.backends.cuda.matmul.allow_tf32, read without that property's
    # Python layers (several microseconds a call).
    if dtype == torch.float32 and not torch._C._get_cublas_allow_tf32():
        return "ieee"
    return "tf32"


def _batched(t: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and strides of ``t`` (1-, 2- or 3-D) as a (batch, rows, cols) operand, without a
    view: a vector is one column, a matrix a batch of one."""
    shape, strides = t.shape, t.stride()
    if len(shape) == 3:
        return shape, strides
    if len(shape) == 2:
        return (1, *shape), (0, *strides)
    return (1, shape[0], 1), (0, strides[0], 1)


class _Plan(NamedTuple):
    """What a product of given operand layouts launches: everything but the tensors, the
    scalars and the TF32 flag."""

    grid: tuple[int, int]
    sizes_and_strides: tuple[int, ...]
    """M, N, K, then the (batch, row, col) strides of a, b, c and the bias."""
    blocks: tuple[int, int, int, int]


# Plans per operand layout: a small product's host path is one look-up instead of microseconds
# of shape arithmetic. Bounded: a process that sees many layouts starts it over.
_PLANS: dict[tuple[Any, ...], _Plan | None] = {}
_MAX_PLANS: Final = 4096
_NO_PLAN: Final = _Plan((0, 0), (), (0, 0, 0, 0))
"""Stands for a layout not planned yet."""


def _run(
    plan: _Plan,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    alpha: float,
    beta: float,
) -> None:
    block_m, block_n, block_k, warps = plan.blocks
    _matmul_kernel.run(
        a, b, c, bias, *plan.sizes_and_strides, alpha, beta,
        HAS_BIAS=bias is not None and beta != 0, PRECISION=dot_precision(a.dtype),
        # Triton's interpreter multiplies bfloat16 tiles wrongly; it gets float32 tiles.
        UPCAST=current_vendor().name == "cpu",
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps,
        grid=plan.grid, warmup=False,
    )  # fmt: skip


def _plan(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    alpha: float,
    beta: float,
) -> _Plan | None:
    """The plan for these operands (None when the product is empty); on a GPU, the first
    product of a shape bucket measures the block candidates on them."""
    (batch, m, k), a_strides = _batched(a)
    (_, _, n), b_strides = _batched(b)
    _, c_strides = _batched(c)
    if c.numel() == 0:
        return None
    bias_strides = (0, 0, 0) if bias is None else _batched(bias)[1]
    sizes_and_strides = (m, n, k, *a_strides, *b_strides, *c_strides, *bias_strides)

    def plan_for(blocks: tuple[int, ...]) -> _Plan:
        block_m, block_n, block_k, warps = blocks
        grid = (tuning.cdiv(m, block_m) * tuning.cdiv(n, block_n), batch)
        return _Plan(grid, sizes_and_strides, (block_m, block_n, block_k, warps))

    def launch(blocks: tuple[int, ...]) -> None:
        _run(plan_for(blocks), a, b, c, bias, alpha, beta)

    return plan_for(_blocks(m, n, k, a.dtype, _measure(launch)))


def _launch(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> torch.Tensor:
    """c[i] = alpha * a[i] @ b[i] + beta * bias, for a (B, M, K), b (B, K, N), c (B, M, N), each
    given 3-D or as one matrix (2-D) or column (1-D)."""
    key = (a.shape, a.stride(), b.shape, b.stride(), c.shape, c.stride(), a.dtype,
           None if bias is None else bias.stride())  # fmt: skip
    plan = _PLANS.get(key, _NO_PLAN)
    if plan is _NO_PLAN:
        plan = _plan(a, b, c, bias, alpha, beta)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    if plan is not None:
        _run(plan, a, b, c, bias, alpha, beta)
    return c


def _check(name: str, a: torch.Tensor, b: torch.Tensor, a_dims: int, b_dims: int) -> None:
    if a.dim() != a_dims or b.dim() != b_dims:
        raise RuntimeError(
            f"{name}: expected {a_dims}-D and {b_dims}-D operands, got {a.dim()}-D and {b.dim()}-D"
        )
    if a.shape[-1] != b.shape[-2 if b_dims > 1 else 0]:
        raise RuntimeError(f"{name}: inner dimensions differ: {list(a.shape)} and {list(b.shape)}")


def mm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """aten::mm."""
    _check("mm", self, mat2, 2, 2)
    out = self.new_empty((self.shape[0], mat2.shape[1]))
    _launch(self, mat2, out)
    return out


def bmm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """aten::bmm."""
    _check("bmm", self, mat2, 3, 3)
    if self.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: {self.shape[0]} and {mat2.shape[0]}")
    out = torch.empty(self.shape[0], self.shape[1], mat2.shape[2], dtype=self.dtype,
                      device=self.device)  # fmt: skip
    return _launch(self, mat2, out)


def addmm(
    self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta: Any = 1, alpha: Any = 1
) -> torch.Tensor:
    """aten::addmm: beta * self + alpha * mat1 @ mat2 (``self`` broadcasts)."""
    _check("addmm", mat1, mat2, 2, 2)
    out = torch.empty(mat1.shape[0], mat2.shape[1], dtype=mat1.dtype, device=mat1.device)
    bias = self.expand(out.shape)
    _launch(mat1, mat2, out, bias, float(alpha), float(beta))
    return out


def mv(self: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """aten::mv."""
    _check("mv", self, vec, 2, 1)
    out = torch.empty(self.shape[0], dtype=self.dtype, device=self.device)
    _launch(self, vec, out)
    return out


def _sized(out: torch.Tensor, *shape: int) -> torch.Tensor:
    """``out`` resized to ``shape`` when it differs, as ATen's ``out=`` does."""
    if tuple(out.shape) != shape:
        out.resize_(shape)
    return out


def mm_out(self: torch.Tensor, mat2: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """aten::mm.out: written straight into ``out`` (any strides)."""
    _check("mm", self, mat2, 2, 2)
    return _launch(self, mat2, _sized(out, self.shape[0], mat2.shape[1]))


def bmm_out(self: torch.Tensor, mat2: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """aten::bmm.out."""
    _check("bmm", self, mat2, 3, 3)
    return _launch(self, mat2, _sized(out, self.shape[0], self.shape[1], mat2.shape[2]))


def addmm_out(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    *,
    beta: Any = 1,
    alpha: Any = 1,
    out: torch.Tensor,
) -> torch.Tensor:
    """aten::addmm.out (``out`` may be ``self``: each element's bias is read by the program that
    writes it)."""
    _check("addmm", mat1, mat2, 2, 2)
    bias = self.expand(mat1.shape[0], mat2.shape[1])
    if out is not self:
        _sized(out, mat1.shape[0], mat2.shape[1])
    return _launch(mat1, mat2, out, bias, float(alpha), float(beta))


def addmm_(
    self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta: Any = 1, alpha: Any = 1
) -> torch.Tensor:
    """aten::addmm_."""
    return addmm_out(self, mat1, mat2, beta=beta, alpha=alpha, out=self)


def baddbmm(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    *,
    beta: Any = 1,
    alpha: Any = 1,
) -> torch.Tensor:
    """aten::baddbmm: beta * self + alpha * batch1 @ batch2 (``self`` broadcasts)."""
    _check("baddbmm", batch1, batch2, 3, 3)
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    out = torch.empty(shape, dtype=batch1.dtype, device=batch1.device)
    return _launch(batch1, batch2, out, self.expand(shape), float(alpha), float(beta))


def baddbmm_(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    *,
    beta: Any = 1,
    alpha: Any = 1,
) -> torch.Tensor:
    """aten::baddbmm_."""
    _check("baddbmm", batch1, batch2, 3, 3)
    return _launch(batch1, batch2, self, self, float(alpha), float(beta))


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *entries(mm, "mm", condition=is_matmul_dtype),
    *entries(bmm, "bmm", condition=is_matmul_dtype),
    *entries(addmm, "addmm", condition=is_matmul_dtype),
    *entries(mv, "mv", condition=is_matmul_dtype),
    Registration("mm.out", mm_out, condition=is_matmul_dtype),
    Registration("bmm.out", bmm_out, condition=is_matmul_dtype),
    Registration("addmm.out", addmm_out, condition=is_matmul_dtype),
    Registration("addmm_", addmm_, condition=is_matmul_dtype),
    Registration("baddbmm", baddbmm, condition=is_matmul_dtype),
    Registration("baddbmm_", baddbmm_, condition=is_matmul_dtype),
)
