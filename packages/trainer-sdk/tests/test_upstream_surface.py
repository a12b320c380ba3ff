"""Our public surface against upstream's (``kubeflow`` 0.5.0, checked in as data): every
difference is one the README lists as deliberate, and every one it lists still exists."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .tools.test_sdk_surface import sdk_surface

PACKAGE = Path(__file__).resolve().parents[1]
UPSTREAM = PACKAGE / "tests" / "data" / "kubeflow_0.5.0_surface.json"
README = PACKAGE / "README.md"
SECTION = "### Deliberate differences from kubeflow 0.5.0"
_BULLET_KEYS = re.compile(r"^- ((?:`[^`]+`,?\s*)+):", re.MULTILINE)


def deliberate_keys(readme: str, heading: str = SECTION) -> set[str]:
    """The names the README's deliberate-differences list under ``heading`` starts bullets with."""
    section = readme.split(heading, 1)[1].split("\n#", 1)[0]
    bullets = _BULLET_KEYS.findall(section.replace("\n  `", " `"))
    return {key for bullet in bullets for key in re.findall(r"`([^`]+)`", bullet)}


def test_upstreams_surface_is_ours_but_for_the_deliberate_differences() -> None:
    upstream: dict[str, Any] = json.loads(UPSTREAM.read_text())
    found = sdk_surface.differences(upstream, sdk_surface.describe("trainer_sdk"))
    listed = deliberate_keys(README.read_text())
    unlisted = {key: why for key, why in found.items() if key not in listed}
    assert not unlisted, f"differences from upstream the README does not list: {unlisted}"
    assert not listed - set(found), f"README lists differences that are gone: {listed - set(found)}"


def test_the_checked_in_surface_covers_upstreams_public_api() -> None:
    upstream = json.loads(UPSTREAM.read_text())
    assert upstream["api.trainer_client.TrainerClient"]["kind"] == "class"
    assert upstream["types.types.Runtime"]["fields"] == [
        ["name", True],
        ["trainer", True],
        ["kind", True],
        ["pretrained_model", False],
    ]
    assert {"get_tpu_num_nodes", "TrainingRuntimeSource", "constants.constants.NPU_LABEL"} <= set(
        upstream
    )
