"""rotary_embedding: rotation of the half-split last dim and its gradient."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy, fused


def reference(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False
) -> torch.Tensor:
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return rotated.flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


@pytest.mark.parametrize("interleaved", [False, True], ids=["half-split", "interleaved"])
@pytest.mark.parametrize(("shape", "dtype"), accuracy.dtype_variants([((1, 2),), ((2, 5, 3, 8),)]))
def test_rotary(shape: tuple[int, ...], dtype: torch.dtype, interleaved: bool) -> None:
    x = accuracy.make_tensor(shape, dtype)
    angles = accuracy.make_tensor(
        (shape[-3] if len(shape) > 2 else 1, 1, shape[-1] // 2), torch.float32
    )
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    if len(shape) == 2:
        cos, sin = cos[0, 0], sin[0, 0]
    grad = accuracy.make_tensor(shape, dtype)
    # cos and sin are constants (no gradient), so they are closed over rather than passed.
    cos64, sin64 = accuracy.to_reference(cos), accuracy.to_reference(sin)
    accuracy.check_fused(
        accuracy.with_gradients(lambda t: fused.rotary_embedding(t, cos, sin, interleaved)),
        accuracy.with_gradients(lambda t: reference(t, cos64, sin64, interleaved)),
        x, grad,
    )  # fmt: skip


def test_cos_sin_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="rotary_embedding: cos"):
        fused.rotary_embedding(torch.ones(2, 8), torch.ones(3), torch.ones(3))
