"""Fused operators with no single ATen counterpart (``gems_kernels.fused.silu_and_mul``)."""

__all__: list[str] = []
