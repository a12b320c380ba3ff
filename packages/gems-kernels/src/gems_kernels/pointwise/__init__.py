"""The pointwise kernel generator."""

from gems_kernels.pointwise.dynamic import (
    PointwiseOp,
    Promotion,
    pointwise_dynamic,
    supports_dtype,
)

__all__ = ["PointwiseOp", "Promotion", "pointwise_dynamic", "supports_dtype"]
