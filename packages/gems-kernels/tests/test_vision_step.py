"""Training steps of ResNet-18, MobileNet-V2/V3 and ViT blocks (``benchmarks/vision_models``)
run every non-view op on gems, and their fp32 losses and gradients follow a float64 run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import gems_kernels
import pytest
import torch
from gems_kernels.coverage import NativeOpTrace

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
NAMES = ["resnet18", "mobilenet_v2", "mobilenet_v3", "vit"]


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``benchmarks/vision_models.py``, forgotten afterwards."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import vision_models

    yield vision_models
    sys.modules.pop("vision_models", None)


@pytest.mark.parametrize("name", NAMES)
def test_every_op_of_the_step_runs_on_gems(name: str, models: ModuleType) -> None:
    step = models.VisionStep(name)  # built outside gems, as ATen would initialise it
    with gems_kernels.use_gems(), NativeOpTrace() as trace:
        step.step()  # AdamW's foreach step runs the same ops at every step
    assert dict(trace.native) == {}, f"ATen ops that ran natively: {dict(trace.native)}"
    assert dict(trace.host) == {}, f"ATen calls of gems host code: {dict(trace.host)}"
    assert trace.gems["convolution.default"] and trace.gems["convolution_backward.default"]


@pytest.mark.parametrize("name", NAMES)
def test_fp32_gradients_follow_float64(name: str, models: ModuleType) -> None:
    """gems in float32 against the same step in float64; ATen's float32 error is printed
    for information, never a pass condition."""
    # Built outside gems: its uniform_ draws another stream than ATen's.
    on_gems, on_aten = (models.VisionStep(name, dropout=False) for _ in range(2))
    reference_loss, reference = models.VisionStep(
        name, dropout=False, dtype=torch.float64
    ).gradients()
    with gems_kernels.use_gems():
        loss, grads = on_gems.gradients()
    _, aten = on_aten.gradients()
    torch.testing.assert_close(loss.double(), reference_loss, rtol=1e-5, atol=1e-6)
    # Relative to the model's largest gradient: some gradients are zero in exact arithmetic
    # (the bias of a batch norm whose output another batch norm normalises), and both float32
    # runs leave rounding noise there.
    scale = max(float(g.abs().max()) for g in reference.values())
    worst = {"gems": 0.0, "aten": 0.0}
    for key, expected in reference.items():
        for label, got in (("gems", grads[key]), ("aten", aten[key])):
            error = float((got.double() - expected).abs().max()) / scale
            worst[label] = max(worst[label], error)
    print(f"{name}: largest gradient error relative to the largest gradient, {worst}")
    assert worst["gems"] <= 1e-5, worst
