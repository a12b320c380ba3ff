"""Vendors and their tuning; the current vendor is read once, lazily, from the environment."""

from __future__ import annotations

import functools

from gems_kernels.backends.tuning import (
    TUNING,
    LaunchConfig,
    cdiv,
    launch_config,
    next_power_of_2,
)
from gems_kernels.backends.vendors import VENDORS, UnknownVendorError, Vendor, detect_vendor

__all__ = [
    "TUNING",
    "VENDORS",
    "LaunchConfig",
    "UnknownVendorError",
    "Vendor",
    "cdiv",
    "current_vendor",
    "detect_vendor",
    "launch_config",
    "next_power_of_2",
]


@functools.cache
def current_vendor() -> Vendor:
    """The vendor of this process, detected on first use and then fixed."""
    return detect_vendor()
