"""The optimizer's public surface against upstream's ``kubeflow.optimizer`` 0.5.0 (checked in as
data): every difference is one the README lists as deliberate, and every one it lists exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_upstream_surface import README, deliberate_keys
from .tools.test_sdk_surface import sdk_surface

UPSTREAM = Path(__file__).resolve().parent / "data" / "kubeflow_0.5.0_optimizer_surface.json"
SECTION = "### Deliberate differences from kubeflow.optimizer 0.5.0"


def test_upstreams_optimizer_surface_is_ours_but_for_the_deliberate_differences() -> None:
    upstream: dict[str, Any] = json.loads(UPSTREAM.read_text())
    ours = sdk_surface.describe("trainer_sdk.optimizer", sdk_surface.OPTIMIZER_MODULES)
    found = sdk_surface.differences(upstream, ours)
    listed = deliberate_keys(README.read_text(), SECTION)
    unlisted = {key: why for key, why in found.items() if key not in listed}
    assert not unlisted, f"differences from upstream the README does not list: {unlisted}"
    assert not listed - set(found), f"README lists differences that are gone: {listed - set(found)}"


def test_the_checked_in_surface_is_upstreams_optimizer() -> None:
    upstream = json.loads(UPSTREAM.read_text())
    assert upstream["OptimizerClient"]["kind"] == "class"
    assert upstream["types.optimization_types.TrialConfig"]["fields"] == [
        ["num_trials", False],
        ["parallel_trials", False],
        ["max_failed_trials", False],
    ]
