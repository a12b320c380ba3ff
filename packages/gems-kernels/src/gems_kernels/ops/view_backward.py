"""The backward ops of indexing views, and scalar_tensor: select_backward (``x[:, 0]``, a ViT's
or BERT's CLS pooling), slice_backward (``x[:, 1:]``) and scalar_tensor, each a zero fill and a
strided copy into a view of the result (gems kernels both)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch

from gems_kernels.ops import copies
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import supports_dtype

__all__ = [
    "REGISTRATIONS",
    "is_plain_scalar_tensor",
    "is_storable",
    "scalar_tensor",
    "select_backward",
    "slice_backward",
]


def is_storable(grad_output: torch.Tensor, *args: Any) -> bool:
    """Condition: a gradient of a dtype the copy kernel stores."""
    return supports_dtype(grad_output.dtype)


def _zeros(grad_output: torch.Tensor, input_sizes: Sequence[int]) -> torch.Tensor:
    out = torch.empty(list(input_sizes), dtype=grad_output.dtype, device=grad_output.device)
    return copies.zero_(out) if out.numel() else out


def select_backward(
    grad_output: torch.Tensor, input_sizes: Sequence[int], dim: int, index: int
) -> torch.Tensor:
    """aten::select_backward: zeros of the input's shape with ``grad_output`` at ``index``."""
    out = _zeros(grad_output, input_sizes)
    copies.copy_(out.select(dim, index), grad_output)
    return out


def slice_backward(
    grad_output: torch.Tensor,
    input_sizes: Sequence[int],
    dim: int,
    start: int,
    end: int,
    step: int,
) -> torch.Tensor:
    """aten::slice_backward: zeros of the input's shape with ``grad_output`` in the slice."""
    out = _zeros(grad_output, input_sizes)
    region = (slice(None),) * (dim % max(out.dim(), 1)) + (slice(start, end, step),)
    copies.copy_(out[region], grad_output)
    return out


def is_plain_scalar_tensor(s: Any, **options: Any) -> bool:
    """Condition: a real number stored as a dtype the fill kernel writes, strided, unpinned."""
    dtype = options.get("dtype") or torch.get_default_dtype()
    return (
        not isinstance(s, complex)
        and supports_dtype(dtype)
        and options.get("layout") in (None, torch.strided)
        and not options.get("pin_memory")
    )


def scalar_tensor(
    s: Any,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> torch.Tensor:
    """aten::scalar_tensor: a 0-d tensor holding ``s`` (the default dtype unless given)."""
    out = torch.empty((), dtype=dtype or torch.get_default_dtype(), device=device)
    return copies.fill_(out, s)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("select_backward", select_backward, condition=is_storable),
    Registration("slice_backward", slice_backward, condition=is_storable),
    Registration(
        "scalar_tensor",
        scalar_tensor,
        condition=is_plain_scalar_tensor,
    ),
)
