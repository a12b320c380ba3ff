"""tools/sdk_surface.py: what it records of an object, and which changes it calls differences."""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "sdk_surface.py"
_spec = importlib.util.spec_from_file_location("sdk_surface", _SCRIPT)
assert _spec is not None and _spec.loader is not None
sdk_surface = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sdk_surface)


@dataclasses.dataclass
class Upstream:
    name: str
    kind: str
    extra: int | None = None


@dataclasses.dataclass
class SameWithMore:
    name: str
    kind: str
    extra: int | None = None
    more: bool = False


@dataclasses.dataclass
class Reordered:
    kind: str
    name: str
    extra: int | None = None


@dataclasses.dataclass
class KindOptional:
    name: str
    kind: str = "x"
    extra: int | None = None


def upstream_wait(name: str, timeout: int = 600, callbacks: list[Any] | None = None) -> None: ...


def wait_with_more(
    name: str, timeout: int = 600, callbacks: list[Any] | None = None, *, extra: int = 1
) -> None: ...


def wait_without_callbacks(name: str, timeout: int = 600) -> None: ...


def wait_other_default(
    name: str, timeout: int = 60, callbacks: list[Any] | None = None
) -> None: ...


class Colour(enum.Enum):
    RED = "red"


class StrColour(str, enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("theirs", "ours", "problem"),
    [
        pytest.param(Upstream, SameWithMore, None, id="optional-field-added-at-the-end"),
        pytest.param(Upstream, Reordered, "fields", id="fields-reordered"),
        pytest.param(Upstream, KindOptional, "field 'kind' optional", id="required-made-optional"),
        pytest.param(upstream_wait, wait_with_more, None, id="keyword-only-added"),
        pytest.param(upstream_wait, wait_without_callbacks, "'callbacks' missing", id="no-param"),
        pytest.param(upstream_wait, wait_other_default, "defaults to 60", id="other-default"),
        pytest.param(Colour, StrColour, None, id="enum-members-equal"),
        pytest.param(Upstream, upstream_wait, "a function, upstream a dataclass", id="kind"),
    ],
)
def test_differences_are_what_would_break_a_caller(
    theirs: Any, ours: Any, problem: str | None
) -> None:
    found = sdk_surface.differences(
        {"X": sdk_surface.describe_object(theirs)}, {"X": sdk_surface.describe_object(ours)}
    )
    if problem is None:
        assert found == {}
    else:
        assert problem in " ".join(found["X"])


def test_a_missing_name_is_a_difference() -> None:
    assert sdk_surface.differences({"X": {"kind": "value", "value": 1}}, {}) == {"X": ["missing"]}


def test_constants_are_compared_by_value() -> None:
    theirs, ours = sdk_surface.describe_object("a"), sdk_surface.describe_object("b")
    assert sdk_surface.differences({"C": theirs}, {"C": ours}) == {"C": ["value 'b', upstream 'a'"]}
