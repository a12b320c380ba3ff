"""``out=`` and in-place forms of gems ops whose kernels write a fresh result: the result is
computed as usual and copied into ``out`` (resized as ATen resizes it) or ``self``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import torch

from gems_kernels.ops import copies
from gems_kernels.ops.reductions import is_floating_input, sum_dim
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.scans import cumsum
from gems_kernels.ops.softmax import log_softmax, softmax
from gems_kernels.ops.triangular import tril, triu

__all__ = [
    "REGISTRATIONS",
    "cumsum_",
    "cumsum_out",
    "log_softmax_out",
    "softmax_out",
    "sum_out",
    "tril_",
    "tril_out",
    "triu_",
    "triu_out",
    "write_out",
]


def write_out(result: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Copy ``result`` into ``out``, resizing ``out`` first when the shapes differ."""
    if out.shape != result.shape:
        out.resize_(result.shape)
    return copies.copy_(out, result)


def _out(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def run(*args: Any, out: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return write_out(fn(*args, **kwargs), out)

    run.__name__ = f"{fn.__name__}_out"
    return run


def _inplace(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def run(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return copies.copy_(self, fn(self, *args, **kwargs))

    run.__name__ = f"{fn.__name__}_"
    return run


softmax_out = _out(softmax)
log_softmax_out = _out(log_softmax)
cumsum_out = _out(cumsum)
tril_out = _out(tril)
triu_out = _out(triu)
tril_ = _inplace(tril)
triu_ = _inplace(triu)


def cumsum_(self: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten::cumsum_."""
    return copies.copy_(self, cumsum(self, dim, dtype=dtype))


def sum_out(
    self: torch.Tensor,
    dim: Sequence[int] | None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
    out: torch.Tensor,
) -> torch.Tensor:
    """aten::sum.IntList_out."""
    return write_out(sum_dim(self, dim, keepdim, dtype=dtype), out)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("cumsum.out", cumsum_out),
    Registration("cumsum_", cumsum_),
    Registration("sum.IntList_out", sum_out),
    Registration("_softmax.out", softmax_out, condition=is_floating_input),
    Registration("_log_softmax.out", log_softmax_out, condition=is_floating_input),
    Registration("triu_", triu_),
    Registration("tril_", tril_),
    Registration("triu.out", triu_out),
    Registration("tril.out", tril_out),
)
