"""Triton implementations of ATen operators registered into PyTorch's dispatcher.

``enable()`` (or ``with use_gems(): ...``) makes eager PyTorch run the registered ATen overloads
on Triton kernels; ``gems_kernels.ops`` and ``gems_kernels.fused`` call them directly.
"""

from importlib import metadata as _metadata

from gems_kernels import backends as _backends
from gems_kernels import fused as fused
from gems_kernels import ops as ops
from gems_kernels.dispatch import GemsSession, disable, enable, only_enable, use_gems
from gems_kernels.pointwise import pointwise_dynamic
from gems_kernels.registration import all_registered_ops

vendor_name: str = _backends.current_vendor().name

__version__ = _metadata.version("gems-kernels")

__all__ = [
    "GemsSession",
    "__version__",
    "all_registered_ops",
    "disable",
    "enable",
    "only_enable",
    "pointwise_dynamic",
    "use_gems",
    "vendor_name",
]
