"""Nearest and bilinear upsampling, forward and backward, against float64 ATen."""

from __future__ import annotations

from typing import Any

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

_NEAREST = ["upsample_nearest2d", "upsample_nearest2d_backward"]
_BILINEAR = ["upsample_bilinear2d", "upsample_bilinear2d_backward"]
CASES = [
    pytest.param(dict(scale_factor=2, mode="nearest"), _NEAREST, id="nearest-x2"),
    pytest.param(dict(size=(5, 7), mode="nearest"), _NEAREST, id="nearest-odd"),
    pytest.param(dict(size=(3, 2), mode="nearest"), _NEAREST, id="nearest-down"),
    pytest.param(dict(scale_factor=2, mode="bilinear"), _BILINEAR, id="bilinear-x2"),
    pytest.param(dict(size=(7, 3), mode="bilinear"), _BILINEAR, id="bilinear-odd"),
    pytest.param(
        dict(scale_factor=2.5, mode="bilinear", align_corners=True), _BILINEAR, id="align"
    ),
    pytest.param(dict(size=(1, 6), mode="bilinear", align_corners=True), _BILINEAR, id="one"),
]


@pytest.mark.parametrize(("options", "overloads"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_upsample(options: dict[str, Any], overloads: list[str], dtype: torch.dtype) -> None:
    x = accuracy.make_tensor((2, 3, 4, 5), dtype)

    def up(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **options)

    grad = accuracy.make_tensor(up(x).shape, dtype)
    accuracy.check_op(accuracy.with_gradients(up), x, grad, overloads=overloads, reduce_size=9)


def test_channels_last_and_fall_through() -> None:
    x = accuracy.make_tensor((1, 3, 4, 4), torch.float32).to(memory_format=torch.channels_last)
    with gems_kernels.use_gems(include=_NEAREST + _BILINEAR, record=True) as session:
        y = F.interpolate(x, scale_factor=2, mode="bilinear")
        F.interpolate(x.double(), scale_factor=2)
    assert session.recorder is not None and session.recorder.seen == {"upsample_bilinear2d"}
    assert y.is_contiguous(memory_format=torch.channels_last)
    accuracy.assert_close(y, F.interpolate(x.double(), scale_factor=2, mode="bilinear"))
