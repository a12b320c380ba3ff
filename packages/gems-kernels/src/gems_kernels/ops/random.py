"""In-place random fills: uniform_, normal_ and bernoulli_ with Triton's Philox generator.

The seed is drawn from the call's ``generator`` (PyTorch's default one when None), so
``torch.manual_seed`` makes runs repeatable; the numbers differ from ATen's own stream.
"""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "bernoulli_", "is_dense_float", "normal_", "uniform_"]

_UNIFORM, _NORMAL, _BERNOULLI = 0, 1, 2


@triton.jit
def _random_kernel(out, numel, seed, a, b, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < numel
    if KIND == 1:
        value = a + b * tl.randn(seed, offsets)
    elif KIND == 0:
        value = a + (b - a) * tl.rand(seed, offsets)
    else:
        value = (tl.rand(seed, offsets) < a).to(tl.float32)
    store(out + offsets, value, mask=mask)


def is_dense_float(self: torch.Tensor, *args: Any, **kwargs: Any) -> bool:
    """Condition: a floating tensor whose elements are one dense block (any dim order)."""
    return self.is_floating_point() and self.is_contiguous()


def _seed(generator: torch.Generator | None) -> int:
    return int(torch.randint(0, 2**31 - 1, (), generator=generator).item())


def _fill(self: torch.Tensor, kind: int, a: float, b: float, generator: Any) -> torch.Tensor:
    numel = self.numel()
    if numel:
        config = launch_config(current_vendor().name, "pointwise")
        block = min(config.block_size, tuning.next_power_of_2(numel))
        _random_kernel.run(
            self, numel, _seed(generator), a, b, KIND=kind, BLOCK=block,
            num_warps=config.num_warps,
            grid=(tuning.cdiv(numel, block),), warmup=False,
        )  # fmt: skip
    return self


def uniform_(
    self: torch.Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Any = None
) -> torch.Tensor:
    """aten::uniform_: values in [from, to)."""
    return _fill(self, _UNIFORM, float(from_), float(to), generator)


def normal_(
    self: torch.Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None
) -> torch.Tensor:
    """aten::normal_."""
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    return _fill(self, _NORMAL, float(mean), float(std), generator)


def bernoulli_(self: torch.Tensor, p: float = 0.5, *, generator: Any = None) -> torch.Tensor:
    """aten::bernoulli_.float: 1 with probability p, else 0."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, _BERNOULLI, float(p), 0.0, generator)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("uniform_", uniform_, condition=is_dense_float),
    Registration("normal_", normal_, condition=is_dense_float),
    Registration("bernoulli_.float", bernoulli_, condition=is_dense_float),
)
