"""fused_add_rms_norm and skip_layer_norm: outputs, updated residual and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy, fused


@pytest.mark.parametrize(("shape", "dtype"), accuracy.dtype_variants([((1, 8),), ((3, 5, 33),)]))
def test_fused_add_rms_norm(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x, residual = accuracy.make_tensor(shape, dtype), accuracy.make_tensor(shape, dtype)
    weight = accuracy.make_tensor(shape[-1:], dtype)
    grad = accuracy.make_tensor(shape, dtype)

    def reference(t: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        total = t + r
        return F.rms_norm(total, w.shape, w, eps=1e-6), total

    accuracy.check_fused(
        accuracy.with_gradients(fused.fused_add_rms_norm),
        accuracy.with_gradients(reference),
        x,
        residual,
        weight,
        grad,
        reduce_size=max(shape[-1], x.numel() // shape[-1]),
    )
    _, total = fused.fused_add_rms_norm(x, residual, weight)
    accuracy.assert_close(total, accuracy.to_reference(x) + accuracy.to_reference(residual))


@pytest.mark.parametrize("dtype", accuracy.FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_skip_layer_norm(with_bias: bool, dtype: torch.dtype) -> None:
    x, skip = accuracy.make_tensor((4, 24), dtype), accuracy.make_tensor((4, 24), dtype)
    weight = accuracy.make_tensor((24,), dtype)
    bias = accuracy.make_tensor((24,), dtype) if with_bias else None
    grad = accuracy.make_tensor((4, 24), dtype)
    accuracy.check_fused(
        accuracy.with_gradients(fused.skip_layer_norm),
        accuracy.with_gradients(lambda t, s, w, b: F.layer_norm(t + s, w.shape, w, b)),
        x, skip, weight, bias, grad, reduce_size=24,
    )  # fmt: skip


def test_shape_mismatch_is_rejected() -> None:
    with pytest.raises(ValueError, match="fused_add_rms_norm: x"):
        fused.fused_add_rms_norm(torch.ones(2, 4), torch.ones(2, 3), torch.ones(4))
