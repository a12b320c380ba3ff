"""layer_norm forward and every gradient, with and without affine parameters."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

CASES = [((1, 7), (7,)), ((4, 33), (33,)), ((2, 3, 16), (3, 16)), ((3, 1100), (1100,))]


@pytest.mark.parametrize(("shape", "normalized", "dtype"), accuracy.dtype_variants(CASES))
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_forward_and_backward(
    shape: tuple[int, ...], normalized: tuple[int, ...], affine: bool, dtype: torch.dtype
) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor(shape, dtype)
    weight = accuracy.make_tensor(normalized, dtype) if affine else None
    bias = accuracy.make_tensor(normalized, dtype) if affine else None
    rows = x.numel() // weight.numel() if weight is not None else 1
    accuracy.check_op(
        accuracy.with_gradients(lambda t, w, b: F.layer_norm(t, normalized, w, b, eps=1e-5)),
        x,
        weight,
        bias,
        grad,
        overloads=["native_layer_norm", "native_layer_norm_backward"],
        reduce_size=max(rows, x.shape[-1]),
    )


def test_stats_shapes_match_aten() -> None:
    x = accuracy.make_tensor((2, 3, 8), torch.float32)
    accuracy.check_op(
        lambda t: torch.ops.aten.native_layer_norm(t, [8], None, None, 1e-5),
        x,
        overloads=["native_layer_norm"],
        reduce_size=8,
    )


def test_mismatched_normalized_shape_names_it() -> None:
    from gems_kernels import ops

    with pytest.raises(RuntimeError, match="normalized_shape"):
        ops.layer_norm_forward(torch.ones(2, 3), [4], None, None, 1e-5)
