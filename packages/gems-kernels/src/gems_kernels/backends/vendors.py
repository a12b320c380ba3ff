"""Vendors: which device the kernels run on and at which dispatch keys they register.

Detection reads only environment variables and ``torch.version``; it never initialises a GPU
driver, so importing the package is safe on a CPU-only machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import torch

__all__ = ["VENDORS", "UnknownVendorError", "Vendor", "detect_vendor"]


class UnknownVendorError(ValueError):
    """``GEMS_VENDOR`` names a vendor this package does not know."""


@dataclass(frozen=True)
class Vendor:
    """A device family: its torch device type and the dispatch keys kernels register at."""

    name: str
    device_type: str
    dispatch_key: str
    autograd_key: str


VENDORS: Final[Mapping[str, Vendor]] = {
    "nvidia": Vendor("nvidia", "cuda", "CUDA", "AutogradCUDA"),
    # ROCm builds of PyTorch expose AMD GPUs as the "cuda" device with the CUDA dispatch key.
    "amd": Vendor("amd", "cuda", "CUDA", "AutogradCUDA"),
    "intel": Vendor("intel", "xpu", "XPU", "AutogradXPU"),
    # Triton's interpreter (TRITON_INTERPRET=1) runs kernels on CPU tensors.
    "cpu": Vendor("cpu", "cpu", "CPU", "AutogradCPU"),
}


def detect_vendor(environ: Mapping[str, str] | None = None) -> Vendor:
    """The vendor named by ``GEMS_VENDOR``, else the one this torch build targets.

    Order: ``GEMS_VENDOR``; ``TRITON_INTERPRET=1`` means cpu; a HIP build means amd; a CUDA build
    means nvidia; an XPU build means intel; otherwise cpu. No driver is queried.
    """
    env = os.environ if environ is None else environ
    chosen = env.get("GEMS_VENDOR", "").strip().lower()
    if chosen:
        if chosen not in VENDORS:
            raise UnknownVendorError(
                f"GEMS_VENDOR: expected one of {sorted(VENDORS)}, got {chosen!r}"
            )
        return VENDORS[chosen]
    if env.get("TRITON_INTERPRET", "") == "1":
        return VENDORS["cpu"]
    if getattr(torch.version, "hip", None):
        return VENDORS["amd"]
    if getattr(torch.version, "cuda", None):
        return VENDORS["nvidia"]
    if getattr(torch.version, "xpu", None):
        return VENDORS["intel"]
    return VENDORS["cpu"]
