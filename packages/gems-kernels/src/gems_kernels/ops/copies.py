"""Element copies and fills: copy_, _to_copy, fill_, zero_, cat, stack, repeat, roll and constant
padding.

Everything here is the one strided copy kernel (or the fill kernel) aimed at views of the result.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops.dims import normalize_dims
from gems_kernels.ops.registering import Registration, entries
from gems_kernels.pointwise import pointwise_dynamic, supports_dtype

__all__ = [
    "REGISTRATIONS",
    "cat",
    "cat_out",
    "constant_pad_nd",
    "contiguous",
    "copy_",
    "fill_",
    "is_aligned_roll",
    "is_plain_copy",
    "is_same_device_copy",
    "repeat",
    "roll",
    "stack",
    "to_copy",
    "zero_",
]


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "NO_OPMATH")], casting="unsafe")
@triton.jit
def _copy(x):
    return x


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "ALWAYS_BOOL")])
@triton.jit
def _to_bool(x):
    # bool(x) is x != 0 (NaN is True); a cast would truncate 0.5 to False.
    return x != 0


@pointwise_dynamic(is_tensor=[True, False], promotions=[((0,), "NO_OPMATH")])
@triton.jit
def _fill(x, value):
    # x only gives the shape: the loaded values are replaced.
    return tl.where(x == x, value, value)


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the memory ``a`` and ``b`` span (first to last element) intersects."""
    if (
        not a.numel()
        or not b.numel()
        or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    ):
        return False

    def span(t: torch.Tensor) -> tuple[int, int]:
        start = int(t.storage_offset())
        extent = sum(
            (size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride(), strict=True)
        )
        return start, start + extent

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 <= b1 and b0 <= a1


def is_same_device_copy(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> bool:
    """Condition for copy_: same device, dtypes the kernels store, and no overlap between source
    and destination (unless identical: ATen raises its own error for a partial overlap)."""
    if not isinstance(src, torch.Tensor) or self.device != src.device:
        return False
    if not (supports_dtype(self.dtype) and supports_dtype(src.dtype)):
        return False
    return src is self or not _overlaps(self, src)


def copy_(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """aten::copy_: ``src`` broadcast and converted into ``self`` (into bool as ``src != 0``,
    as ATen converts: a cast would truncate 0.5 to False)."""
    if src is self or not self.numel():
        return self
    if self.dtype == torch.bool and src.dtype != torch.bool:
        return _to_bool(src, out0=self)
    return _copy(src, out0=self)


def is_plain_copy(self: torch.Tensor, **options: Any) -> bool:
    """Condition for _to_copy: a strided result of a dtype the kernels store, on the same device,
    no pinned memory; not a wrapped number (ATen's kernels cast a Python number's 0-d tensor,
    which reaches Python as the number: ``copysign(x, -3.14)``)."""
    device, dtype = options.get("device"), options.get("dtype")
    return (
        isinstance(self, torch.Tensor)
        and (device is None or torch.device(device) == self.device)
        and (dtype is None or supports_dtype(dtype))
        and options.get("layout") in (None, torch.strided)
        and not options.get("pin_memory")
    )


def to_copy(
    self: torch.Tensor,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
    non_blocking: bool = False,
    memory_format: torch.memory_format | None = None,
) -> torch.Tensor:
    """aten::_to_copy on the same device: a converted copy, dense inputs keep their layout."""
    out = torch.empty_like(
        self, dtype=dtype or self.dtype, memory_format=memory_format or torch.preserve_format
    )
    if out.numel():
        if out.dtype == torch.bool and self.dtype != torch.bool:
            _to_bool(self, out0=out)
        else:
            _copy(self, out0=out)
    return out


def contiguous(self: torch.Tensor) -> torch.Tensor:
    """``self``, or a contiguous copy of it on the copy kernel (host code's ``.contiguous()``,
    which would run on ATen)."""
    if self.is_contiguous():
        return self
    return to_copy(self, memory_format=torch.contiguous_format)


def fill_(self: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::fill_.Scalar / fill_.Tensor (a 0-d tensor value is read once on the host)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"value: fill_ expects a 0-d tensor, got {value.dim()}-D")
        return _copy(value, out0=self)
    if self.is_floating_point() and not isinstance(value, float):
        value = float(value)  # an int scalar stored to bfloat16 comes out 0 in Triton's interpreter
    return _fill(self, value, out0=self)


def zero_(self: torch.Tensor) -> torch.Tensor:
    """aten::zero_."""
    return _fill(self, 0, out0=self)


def cat(tensors: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """aten::cat: each input copied into its slice of the result (1-D empty inputs skipped)."""
    inputs = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)]
    if not inputs:
        return torch.empty(0, dtype=tensors[0].dtype, device=tensors[0].device)
    first = inputs[0]
    (axis,) = normalize_dims(dim, first.dim())
    shape = list(first.shape)
    for t in inputs[1:]:
        if t.dim() != first.dim() or any(
            a != b for d, (a, b) in enumerate(zip(t.shape, first.shape, strict=True)) if d != axis
        ):
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {axis}: "
                f"{list(first.shape)} and {list(t.shape)}"
            )
    shape[axis] = sum(t.shape[axis] for t in inputs)
    dtype = functools.reduce(torch.promote_types, (t.dtype for t in inputs))
    out = torch.empty(shape, dtype=dtype, device=first.device)
    offset = 0
    for t in inputs:
        size = t.shape[axis]
        if t.numel():
            _copy(t, out0=out.narrow(axis, offset, size))
        offset += size
    return out


def cat_out(tensors: Sequence[torch.Tensor], dim: int = 0, *, out: torch.Tensor) -> torch.Tensor:
    """aten::cat.out: the concatenation written into ``out`` (resized when its shape differs)."""
    result = cat(tensors, dim)
    if out.shape != result.shape:
        out.resize_(result.shape)
    return _copy(result, out0=out) if result.numel() else out


def stack(tensors: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """aten::stack: every input must have the same shape."""
    if not tensors:
        raise RuntimeError("stack: expects a non-empty list of tensors")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise RuntimeError(f"stack: expects each tensor to be equal size, got {sorted(shapes)}")
    (axis,) = normalize_dims(dim, tensors[0].dim() + 1)
    return cat([t.unsqueeze(axis) for t in tensors], axis)


def repeat(self: torch.Tensor, repeats: Sequence[int]) -> torch.Tensor:
    """aten::repeat: the input tiled ``repeats[d]`` times along each dim."""
    if len(repeats) < self.dim():
        raise RuntimeError(
            f"repeats: number of repeat dims ({len(repeats)}) can not be smaller than the "
            f"number of tensor dims ({self.dim()})"
        )
    source = self.reshape((1,) * (len(repeats) - self.dim()) + tuple(self.shape))
    out_shape = [r * s for r, s in zip(repeats, source.shape, strict=True)]
    out = torch.empty(out_shape, dtype=self.dtype, device=self.device)
    if out.numel():
        # out viewed as (r0, s0, r1, s1, ...) receives the source broadcast over the r's.
        interleaved = [n for pair in zip(repeats, source.shape, strict=True) for n in pair]
        expanded = source.reshape([n for s in source.shape for n in (1, s)]).expand(interleaved)
        _copy(expanded, out0=out.view(interleaved))
    return out


def roll(self: torch.Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> torch.Tensor:
    """aten::roll: each element moved ``shifts[i]`` places along ``dims[i]``, wrapping around;
    without dims, along the flattened tensor. One strided copy per block: a dim shifted by s
    splits into its last s and its other elements, so k shifted dims take 2^k copies."""
    if not dims:
        flat = self if self.is_contiguous() else _copy(self, out0=torch.empty_like(
            self, memory_format=torch.contiguous_format))  # fmt: skip
        return roll(flat.view(-1), shifts, [0]).view(self.shape)
    out = torch.empty_like(self)
    if not out.numel():
        return out
    amounts = dict.fromkeys(normalize_dims(list(dict.fromkeys(dims)), self.dim()), 0)
    for shift, dim in zip(shifts, dims, strict=True):
        amounts[dim % self.dim()] += shift  # a dim named twice rolls by the sum
    # Per dim: (source start, destination start, length) of its one or two blocks.
    blocks = []
    for dim, shift in amounts.items():
        size = self.shape[dim]
        shift %= size
        split = [(0, shift, size - shift), (size - shift, 0, shift)] if shift else [(0, 0, size)]
        blocks.append([(dim, *block) for block in split])
    for combination in itertools.product(*blocks):
        source, target = self, out
        for dim, start, destination, length in combination:
            source = source.narrow(dim, start, length)
            target = target.narrow(dim, destination, length)
        _copy(source, out0=target)
    return out


def is_aligned_roll(self: torch.Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> bool:
    """Condition for roll: one shift per dim, or one shift without dims (ATen raises its own
    error otherwise)."""
    return len(shifts) == len(dims) if dims else len(shifts) == 1


def constant_pad_nd(self: torch.Tensor, pad: Sequence[int], value: Any = 0) -> torch.Tensor:
    """aten::constant_pad_nd: pad (or, for negative amounts, crop) the trailing dims."""
    if len(pad) % 2 or len(pad) // 2 > self.dim():
        raise RuntimeError(f"pad: expected an even length of at most 2 * {self.dim()}, got {pad}")
    shape = list(self.shape)
    source = self
    target: list[tuple[int, int]] = []
    for i in range(len(pad) // 2):
        d = self.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        shape[d] = self.shape[d] + before + after
        if shape[d] < 0:
            raise RuntimeError(f"pad: resulting size of dim {d} would be {shape[d]}")
        crop_start, crop_end = max(0, -before), self.shape[d] - max(0, -after)
        source = source.narrow(d, crop_start, max(0, crop_end - crop_start))
        target.append((d, max(0, before)))
    out = torch.empty(shape, dtype=self.dtype, device=self.device)
    if out.numel():
        _fill(out, value, out0=out)
        region = out
        for d, start in target:
            region = region.narrow(d, start, source.shape[d])
        if source.numel():
            _copy(source, out0=region)
    return out


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *entries(fill_, "fill_.Scalar", "fill_.Tensor"),
    Registration("zero_", zero_),
    Registration("cat", cat),
    Registration("cat.out", cat_out),
    Registration("copy_", copy_, condition=is_same_device_copy),
    Registration("_to_copy", to_copy, condition=is_plain_copy),
    Registration("stack", stack),
    Registration("repeat", repeat),
    Registration("roll", roll, condition=is_aligned_roll),
    Registration("constant_pad_nd", constant_pad_nd),
)
