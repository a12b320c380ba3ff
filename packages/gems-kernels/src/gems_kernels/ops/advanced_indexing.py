"""Advanced indexing: ``x[indices]`` (aten::index.Tensor) and ``x[indices] = v`` / ``+= v``
(aten::_index_put_impl_, so index_put_ and the backward of ``x[indices]``).

Bool masks become their nonzero positions on the host; the index tensors broadcast together;
negative positions count from the end. The result dims follow NumPy's rule: the broadcast index
shape replaces the indexed dims where they are adjacent, and goes first when a ``None`` (a full
slice) separates them. Several index tensors fold into one element offset per position, so every
call is one indexed copy over (dims before, index positions, dims after).
"""

from __future__ import annotations

import functools
from typing import Any, Final, NamedTuple

import torch

from gems_kernels.ops import indexed_copy
from gems_kernels.ops.registering import Registration

__all__ = ["REGISTRATIONS", "index", "index_put_", "is_advanced_index", "is_index_put"]

_MASKS: Final = (torch.bool, torch.uint8)
_POSITIONS: Final = (torch.int32, torch.int64)

Indices = list[torch.Tensor | None]


class _Plan(NamedTuple):
    view: torch.Tensor  # self with the indexed dims adjacent, starting at ``lead``
    lead: int
    indexed: int  # how many dims of ``view`` the positions index
    positions: torch.Tensor  # 1-D
    axis_stride: int  # elements one position step moves in ``view``
    dim_size: int  # negative positions count from here (0: already wrapped)
    broadcast: tuple[int, ...]  # the broadcast shape of the index tensors
    shape: tuple[int, ...]  # the result shape

    def target(self) -> indexed_copy.Target:
        return indexed_copy.target(self.view, self.lead, self.lead + self.indexed, self.axis_stride)

    def walk(self, t: torch.Tensor) -> indexed_copy.Walk:
        """``t`` (of the result shape) walked as (dims before, positions, dims after)."""
        return indexed_copy.walk(t, self.lead, self.lead + len(self.broadcast))

    def positions_walk(self) -> indexed_copy.Walk:
        outer = self.shape[: self.lead]
        inner = self.shape[self.lead + len(self.broadcast) :]
        device = self.positions.device
        return indexed_copy.Walk(
            self.positions,
            indexed_copy.offsets(outer, (0,) * len(outer), device),
            indexed_copy.offsets((self.positions.numel(),), (self.positions.stride(0),), device),
            indexed_copy.offsets(inner, (0,) * len(inner), device),
            0,
        )


def is_advanced_index(self: torch.Tensor, indices: Indices, *args: Any, **kwargs: Any) -> bool:
    """Condition: at least one index tensor, and no 0-d mask (ATen handles those)."""
    tensors = [t for t in indices if t is not None]
    return bool(tensors) and all(t.dim() or t.dtype not in _MASKS for t in tensors)


def is_index_put(self: torch.Tensor, indices: Indices, values: torch.Tensor,
                 accumulate: bool = False, unsafe: bool = False) -> bool:  # fmt: skip
    """Condition: :func:`is_advanced_index`, values of self's dtype and no overlapping
    elements in self (ATen reports both), and, to accumulate, atomic adds allowed into self."""
    return (
        is_advanced_index(self, indices)
        and values.dtype == self.dtype
        and not indexed_copy.has_internal_overlap(self)
        and (not accumulate or indexed_copy.atomic_adds_allowed(self))
    )


def _expand_masks(self: torch.Tensor, indices: Indices) -> Indices:
    """Index tensors with every mask replaced by one position tensor per dim it covers."""
    result: Indices = []
    for t in indices:
        if t is None or t.dtype in _POSITIONS:
            result.append(None if t is None else t.to(self.device))
            continue
        if t.dtype not in _MASKS:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        start = len(result)
        for j, size in enumerate(t.shape):
            if start + j < self.dim() and size != self.shape[start + j]:
                raise IndexError(
                    f"The shape of the mask {list(t.shape)} at index {j} does not match the "
                    f"shape of the indexed tensor {list(self.shape)} at index {start + j}"
                )
        result.extend(t.to(self.device).nonzero().unbind(1))
    if len(result) > self.dim():
        raise IndexError(
            f"too many indices for tensor of dimension {self.dim()} (got {len(result)})"
        )
    return result


def _element_offsets(t: torch.Tensor, size: int, stride: int) -> torch.Tensor:
    # Numbers as tensors: inside a gems kernel, ops fall through to ATen's boxed kernels, whose
    # Tensor overloads do not accept Python numbers.
    size_t, stride_t = (torch.tensor(v, dtype=torch.int64, device=t.device) for v in (size, stride))
    t = t.to(torch.int64)
    return torch.where(t < 0, t + size_t, t) * stride_t


def _plan(self: torch.Tensor, indices: Indices) -> _Plan:
    expanded = _expand_masks(self, indices)
    dims = [d for d, t in enumerate(expanded) if t is not None]
    tensors = [t for t in expanded if t is not None]
    try:
        broadcast = tuple(torch.broadcast_shapes(*(t.shape for t in tensors)))
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for t in tensors)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    # ATen names the position among the index tensors, not the dim of ``self``.
    for position, (d, t) in enumerate(zip(dims, tensors, strict=True)):
        indexed_copy.check_range(t, self.shape[d], position, negative=True, error=IndexError)
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    rest = [d for d in range(self.dim()) if d not in dims]
    view = self if adjacent else self.permute(dims + rest)
    lead = dims[0] if adjacent else 0
    if len(tensors) == 1:
        positions, axis_stride, dim_size = tensors[0], self.stride(dims[0]), self.shape[dims[0]]
    else:
        terms = [
            _element_offsets(t, self.shape[d], self.stride(d))
            for d, t in zip(dims, tensors, strict=True)
        ]
        positions = functools.reduce(torch.add, terms)
        axis_stride, dim_size = 1, 0
    shape = (*view.shape[:lead], *broadcast, *view.shape[lead + len(dims) :])
    return _Plan(
        view, lead, len(dims), positions.reshape(-1), axis_stride, dim_size, broadcast, shape
    )


def index(self: torch.Tensor, indices: Indices) -> torch.Tensor:
    """aten::index.Tensor."""
    plan = _plan(self, list(indices))
    out = torch.empty(plan.shape, dtype=self.dtype, device=self.device)
    indexed_copy.indexed_copy(
        indexed_copy.TAKE, plan.target(), plan.walk(out), plan.positions_walk(), plan.dim_size
    )
    return out


def index_put_(self: torch.Tensor, indices: Indices, values: torch.Tensor,
               accumulate: bool = False, unsafe: bool = False) -> torch.Tensor:  # fmt: skip
    """aten::_index_put_impl_: ``self[indices] = values`` (or ``+=``, summing duplicates with
    atomic adds; half types accumulate in a float32 copy), in place."""
    work = self.float() if accumulate and self.dtype in indexed_copy.HALVES else self
    plan = _plan(work, list(indices))
    try:
        source = values.expand(plan.shape)
    except RuntimeError:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast "
            f"to indexing result of shape {list(plan.shape)}"
        ) from None
    mode = indexed_copy.ADD if accumulate else indexed_copy.STORE
    indexed_copy.indexed_copy(
        mode, plan.target(), plan.walk(source), plan.positions_walk(), plan.dim_size
    )
    return self if work is self else self.copy_(work)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("index.Tensor", index, condition=is_advanced_index),
    Registration("_index_put_impl_", index_put_, condition=is_index_put),
)
