"""logsumexp over dims: max + log(sum(exp(x - max))), from gems kernels, as ATen computes it
(an infinite max is taken out as 0 so that all--inf rows give -inf and +inf rows +inf)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch

from gems_kernels.ops import arithmetic, reductions, selection, unary_math
from gems_kernels.ops.out_variants import write_out
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims

__all__ = ["REGISTRATIONS", "is_floating_logsumexp", "logsumexp", "logsumexp_out"]


def is_floating_logsumexp(self: torch.Tensor, *args: object, **kwargs: object) -> bool:
    """Condition: a floating input with elements (integers promote in ATen)."""
    return self.is_floating_point() and self.numel() > 0


def logsumexp(self: torch.Tensor, dim: Sequence[int], keepdim: bool = False) -> torch.Tensor:
    """aten::logsumexp."""
    if self.dim() == 0:
        return self.clone()
    dims = normalize_dims(dim, self.dim())
    maxes = reductions.amax(self, dims, True)
    finite_maxes = selection.masked_fill(maxes, unary_math.ISINF.functional(maxes), 0.0)
    shifted = unary_math.EXP.functional(arithmetic.sub(self, finite_maxes))
    total = unary_math.LOG.functional(reductions.sum_dim(shifted, dims, True))
    result = arithmetic.add(total, finite_maxes)
    if not keepdim:
        for d in reversed(dims):
            result = result.squeeze(d)
    return result


def logsumexp_out(
    self: torch.Tensor, dim: Sequence[int], keepdim: bool = False, *, out: torch.Tensor
) -> torch.Tensor:
    """aten::logsumexp.out."""
    return write_out(logsumexp(self, dim, keepdim), out)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("logsumexp", logsumexp, condition=is_floating_logsumexp),
    Registration("logsumexp.out", logsumexp_out, condition=is_floating_logsumexp),
)
