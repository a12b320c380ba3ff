"""one_hot: each index compared with every class (registered at the autograd key: ATen's
one_hot is a composite that would decompose above the backend)."""

from __future__ import annotations

from typing import Final

import torch

from gems_kernels.ops import comparisons, copies
from gems_kernels.ops.ranges import arange_out
from gems_kernels.ops.registering import Registration

__all__ = ["REGISTRATIONS", "is_int64_index", "one_hot"]


def is_int64_index(self: torch.Tensor, num_classes: int = -1) -> bool:
    """Condition: an int64 tensor (ATen refuses other dtypes with its own error)."""
    return self.dtype == torch.int64


def one_hot(self: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """aten::one_hot: (..., num_classes) int64, 1 at each index."""
    on_cpu = self.device.type == "cpu" and self.numel()
    if num_classes == -1:
        if not self.numel():
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(self.max()) + 1
    if on_cpu and (int(self.min()) < 0 or int(self.max()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange_out(0, num_classes, out=torch.empty(0, dtype=torch.int64, device=self.device))
    matches = comparisons.EQ.functional(self.unsqueeze(-1), classes)
    return copies.to_copy(matches, dtype=torch.int64)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("one_hot", one_hot, condition=is_int64_index, autograd=True),
)
