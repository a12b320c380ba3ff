"""Indexed copies through offset tables: the kernels behind gather, scatter and advanced indexing.

Every operand is walked as (outer, middle, inner) positions. A plain operand (the output of a
gather, the source of a scatter, the index itself) is addressed as
``outer[o] + middle[m] + inner[n]``; the indexed operand as ``outer[o] + index * axis + inner[n]``,
where ``index`` is read from the index operand at (o, m, n). The offset tables hold element
offsets computed once per (sizes, strides) from the tensor's own strides, so operands of any rank
and layout (transposed, sliced, expanded) are used in place, without copies.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Final, NamedTuple

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.pointwise.rounding import store

__all__ = [
    "ACCUMULABLE",
    "ADD",
    "HALVES",
    "REDUCTIONS",
    "STORE",
    "TAKE",
    "Target",
    "Walk",
    "atomic_adds_allowed",
    "check_range",
    "collapsed_stride",
    "has_internal_overlap",
    "indexed_copy",
    "offsets",
    "reduce_lines",
    "target",
    "walk",
]  # fmt: skip

TAKE: Final = 0  # plain <- indexed
STORE: Final = 1  # indexed <- plain
ADD: Final = 2  # indexed += plain (atomic)
REDUCTIONS: Final = {"sum": 0, "mean": 0, "prod": 1, "amax": 2, "amin": 3}
HALVES: Final = (torch.float16, torch.bfloat16)
# Dtypes the kernels add and reduce into (halves through a float32 copy).
ACCUMULABLE: Final = (*HALVES, torch.float32, torch.float64, torch.int32, torch.int64)


def atomic_adds_allowed(t: torch.Tensor) -> bool:
    """Whether ``ADD`` may write into ``t``: an accumulable dtype, and for floats, deterministic
    algorithms off (the order of atomic float additions changes the rounding)."""
    return t.dtype in ACCUMULABLE and not (
        t.is_floating_point() and torch.are_deterministic_algorithms_enabled()
    )


def has_internal_overlap(t: torch.Tensor) -> bool:
    """Whether elements of ``t`` share memory (an expanded view): not a target to write into."""
    return bool(torch._debug_has_internal_overlap(t) == 1)


class Walk(NamedTuple):
    """A plain operand: element offsets of its outer, middle and inner positions, and the one
    stride of its inner positions when they have one (then the copy kernel needs no table)."""

    tensor: torch.Tensor
    outer: torch.Tensor
    middle: torch.Tensor
    inner: torch.Tensor
    inner_stride: int | None


class Target(NamedTuple):
    """The indexed operand: outer and inner offsets (and the inner positions' one stride, if
    any), and the stride one index step moves."""

    tensor: torch.Tensor
    outer: torch.Tensor
    inner: torch.Tensor
    inner_stride: int | None
    axis_stride: int


def collapsed_stride(sizes: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """The stride that steps through every position of ``sizes`` (row-major) under ``strides``,
    or None when the dims do not collapse into one."""
    dims = [(size, stride) for size, stride in zip(sizes, strides, strict=True) if size != 1]
    if any(outer[1] != inner[1] * inner[0] for outer, inner in itertools.pairwise(dims)):
        return None
    return dims[-1][1] if dims else 1


# Tables up to this many positions are cached (at most 256 of them: 64 MiB in all); larger ones
# (e.g. one per distinct count of a bool mask's positions) are built per call.
_CACHED_TABLE_SIZE: Final = 1 << 15


# Built with Scalar overloads only: inside a gems kernel, ops fall through to ATen, whose boxed
# Tensor overloads do not accept Python numbers.
def _build_offsets(
    sizes: tuple[int, ...], strides: tuple[int, ...], device: torch.device
) -> torch.Tensor:
    table = torch.zeros((), dtype=torch.int64, device=device)
    for size, stride in zip(sizes, strides, strict=True):
        steps = (
            torch.arange(0, size * stride, stride, dtype=torch.int64, device=device)
            if stride
            else torch.zeros(size, dtype=torch.int64, device=device)
        )
        table = table.unsqueeze(-1) + steps
    return table.reshape(-1)


_cached_offsets = functools.lru_cache(maxsize=256)(_build_offsets)


def offsets(sizes: tuple[int, ...], strides: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Element offsets of every position of ``sizes`` (row-major) under ``strides``; small
    tables are cached, so the returned table must not be written."""
    build = _cached_offsets if math.prod(sizes) <= _CACHED_TABLE_SIZE else _build_offsets
    return build(tuple(sizes), tuple(strides), device)


def _split(
    t: torch.Tensor, lead: int, trail: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    sizes, strides = tuple(t.shape), tuple(t.stride())
    outer, middle, inner = (
        offsets(sizes[a:b], strides[a:b], t.device)
        for a, b in ((0, lead), (lead, trail), (trail, t.dim()))
    )
    return outer, middle, inner


def _inner_stride(t: torch.Tensor, trail: int) -> int | None:
    return collapsed_stride(tuple(t.shape[trail:]), tuple(t.stride()[trail:]))


def walk(t: torch.Tensor, lead: int, trail: int) -> Walk:
    """``t`` walked with dims [0, lead) outer, [lead, trail) middle and [trail, ndim) inner."""
    outer, middle, inner = _split(t, lead, trail)
    return Walk(t, outer, middle, inner, _inner_stride(t, trail))


def target(t: torch.Tensor, lead: int, trail: int, axis_stride: int) -> Target:
    """``t`` indexed between dims ``lead`` and ``trail``: outer dims before, inner dims after."""
    outer, _, inner = _split(t, lead, trail)
    return Target(t, outer, inner, _inner_stride(t, trail), axis_stride)


def _tile(inner: int) -> tuple[int, int, int]:
    config = launch_config(current_vendor().name, "row")
    block_n = min(tuning.next_power_of_2(max(inner, 1)), config.block_size)
    return max(1, config.block_size // block_n), block_n, config.num_warps


@triton.jit
def _inner_offsets(table, stride, c, c_mask, TABLE: tl.constexpr):
    # A static branch (TABLE is constexpr): only the taken side is compiled.
    if TABLE:  # noqa: SIM108
        result = tl.load(table + c, mask=c_mask, other=0)
    else:
        result = c * stride
    return result


@triton.jit
def _indexed_copy_kernel(
    target, t_outer, t_inner, t_inner_stride, t_axis,
    plain, p_outer, p_middle, p_inner, p_inner_stride,
    index, i_outer, i_middle, i_inner, i_inner_stride,
    rows, middle, inner, dim_size,
    T_TABLE: tl.constexpr, P_TABLE: tl.constexpr, I_TABLE: tl.constexpr,
    MODE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    r_mask = r < rows
    c_mask = c < inner
    mask = r_mask[:, None] & c_mask[None, :]
    o = r // middle
    m = r % middle
    i_row = tl.load(i_outer + o, mask=r_mask, other=0) + tl.load(i_middle + m, mask=r_mask, other=0)
    i_col = _inner_offsets(i_inner, i_inner_stride, c, c_mask, I_TABLE)
    idx = tl.load(index + i_row[:, None] + i_col[None, :], mask=mask, other=0).to(tl.int64)
    idx = tl.where(idx < 0, idx + dim_size, idx)
    t_row = tl.load(t_outer + o, mask=r_mask, other=0)
    t_col = _inner_offsets(t_inner, t_inner_stride, c, c_mask, T_TABLE)
    t_off = t_row[:, None] + idx * t_axis + t_col[None, :]
    p_row = tl.load(p_outer + o, mask=r_mask, other=0) + tl.load(p_middle + m, mask=r_mask, other=0)
    p_off = p_row[:, None] + _inner_offsets(p_inner, p_inner_stride, c, c_mask, P_TABLE)[None, :]
    if MODE == 0:
        store(plain + p_off, tl.load(target + t_off, mask=mask), mask=mask)
    elif MODE == 1:
        values = tl.load(plain + p_off, mask=mask).to(target.dtype.element_ty)
        store(target + t_off, values, mask=mask)
    else:
        values = tl.load(plain + p_off, mask=mask).to(target.dtype.element_ty)
        tl.atomic_add(target + t_off, values, mask=mask)


@triton.jit
def _reduce_lines_kernel(
    target, t_outer, t_inner, t_axis, count,
    plain, p_outer, p_middle, p_inner,
    index, i_outer, i_middle, i_inner,
    lines, middle, inner, dim_size,
    REDUCE: tl.constexpr, COUNT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # One lane owns one (outer, inner) line and walks its index entries in order: lanes never
    # share a target, so the reduction needs no atomics and is deterministic.
    line = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = line < lines
    o = line // inner
    n = line % inner
    t_base = tl.load(t_outer + o, mask=mask, other=0) + tl.load(t_inner + n, mask=mask, other=0)
    p_base = tl.load(p_outer + o, mask=mask, other=0) + tl.load(p_inner + n, mask=mask, other=0)
    i_base = tl.load(i_outer + o, mask=mask, other=0) + tl.load(i_inner + n, mask=mask, other=0)
    for m in range(0, middle):
        idx = tl.load(index + i_base + tl.load(i_middle + m), mask=mask, other=0).to(tl.int64)
        idx = tl.where(idx < 0, idx + dim_size, idx)
        value = tl.load(plain + p_base + tl.load(p_middle + m), mask=mask)
        value = value.to(target.dtype.element_ty)
        t_off = t_base + idx * t_axis
        current = tl.load(target + t_off, mask=mask)
        if REDUCE == 0:
            result = current + value
        elif REDUCE == 1:
            result = current * value
        elif REDUCE == 2:
            result = tl.where((value > current) | (value != value), value, current)
        else:
            result = tl.where((value < current) | (value != value), value, current)
        store(target + t_off, result, mask=mask)
        if COUNT:
            store(count + t_off, tl.load(count + t_off, mask=mask) + 1, mask=mask)


def indexed_copy(mode: int, dest: Target, plain: Walk, index: Walk, dim_size: int) -> None:
    """Launch one indexed copy: ``TAKE`` reads ``dest`` into ``plain``; ``STORE`` writes
    ``plain`` into ``dest``; ``ADD`` adds it atomically. Negative indices count from
    ``dim_size``."""
    rows = plain.outer.numel() * plain.middle.numel()
    inner = plain.inner.numel()
    if rows == 0 or inner == 0:
        return
    block_m, block_n, warps = _tile(inner)
    grid = (tuning.cdiv(rows, block_m), tuning.cdiv(inner, block_n))
    _indexed_copy_kernel.run(
        dest.tensor, dest.outer, dest.inner, dest.inner_stride or 0, dest.axis_stride,
        plain.tensor, plain.outer, plain.middle, plain.inner, plain.inner_stride or 0,
        index.tensor, index.outer, index.middle, index.inner, index.inner_stride or 0,
        rows, plain.middle.numel(), inner, dim_size,
        T_TABLE=dest.inner_stride is None, P_TABLE=plain.inner_stride is None,
        I_TABLE=index.inner_stride is None,
        MODE=mode, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
        grid=grid, warmup=False,
    )  # fmt: skip


def reduce_lines(
    reduce: str,
    dest: Target,
    plain: Walk,
    index: Walk,
    dim_size: int,
    count: torch.Tensor | None = None,
) -> None:
    """Reduce ``plain`` into ``dest`` at the indexed positions in index order (``reduce`` a key
    of :data:`REDUCTIONS`); ``count`` (laid out like ``dest``) gains one per value."""
    lines = plain.outer.numel() * plain.inner.numel()
    if lines == 0 or plain.middle.numel() == 0:
        return
    config = launch_config(current_vendor().name, "pointwise")
    block = min(tuning.next_power_of_2(lines), config.block_size)
    _reduce_lines_kernel.run(
        dest.tensor, dest.outer, dest.inner, dest.axis_stride, count,
        plain.tensor, plain.outer, plain.middle, plain.inner,
        index.tensor, index.outer, index.middle, index.inner,
        lines, plain.middle.numel(), plain.inner.numel(), dim_size,
        REDUCE=REDUCTIONS[reduce], COUNT=count is not None, BLOCK=block,
        num_warps=config.num_warps,
        grid=(tuning.cdiv(lines, block),), warmup=False,
    )  # fmt: skip


def check_range(index: torch.Tensor, size: int, dim: int, *, negative: bool,
                error: type[Exception]) -> None:  # fmt: skip
    """Raise ``error`` naming the first index outside [0, size) (or [-size, size) when
    ``negative``), as ATen's CPU kernels do. Checked on the CPU only, where it costs no device
    synchronisation."""
    if index.device.type != "cpu" or index.numel() == 0:
        return
    low = -size if negative else 0
    bad = index[(index < low) | (index >= size)]
    if bad.numel():
        raise error(f"index {int(bad[0])} is out of bounds for dimension {dim} with size {size}")
