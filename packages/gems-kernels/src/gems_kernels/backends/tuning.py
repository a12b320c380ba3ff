"""Per-vendor launch settings: block sizes and warp counts for each kernel family."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["TUNING", "LaunchConfig", "cdiv", "launch_config", "next_power_of_2"]


@dataclass(frozen=True)
class LaunchConfig:
    """How a kernel family is launched on one vendor."""

    block_size: int
    num_warps: int


_GPU: Final[Mapping[str, LaunchConfig]] = {
    "pointwise": LaunchConfig(block_size=1024, num_warps=4),
    "reduction": LaunchConfig(block_size=1024, num_warps=8),
    "row": LaunchConfig(block_size=4096, num_warps=8),
}
# The interpreter runs a block as one numpy operation, so large blocks mean fewer Python steps.
_CPU: Final[Mapping[str, LaunchConfig]] = {
    "pointwise": LaunchConfig(block_size=1024, num_warps=1),
    "reduction": LaunchConfig(block_size=1024, num_warps=1),
    "row": LaunchConfig(block_size=1024, num_warps=1),
}
TUNING: Final[Mapping[str, Mapping[str, LaunchConfig]]] = {
    "nvidia": _GPU,
    "amd": {name: LaunchConfig(c.block_size, max(1, c.num_warps // 2)) for name, c in _GPU.items()},
    "intel": _GPU,
    "cpu": _CPU,
}


def launch_config(vendor_name: str, family: str) -> LaunchConfig:
    """The launch settings of kernel ``family`` on ``vendor_name``."""
    try:
        return TUNING[vendor_name][family]
    except KeyError:
        raise KeyError(
            f"no launch config for vendor={vendor_name!r} family={family!r}; "
            f"known families: {sorted(TUNING.get(vendor_name, {}))}"
        ) from None


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for launch grids (``triton.cdiv`` is a constexpr function, slow on the host)."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n`` <= 1), for block sizes."""
    return 1 << (n - 1).bit_length() if n > 1 else 1
