"""The phase loops: order, error gathering, and running with a single fake plugin."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import admitted, make_job, render_of, runtime_doc
from trainer_api import FieldError
from trainer_runtime import InvalidTrainJobError, Observed
from trainer_runtime.info import RuntimeInfo


class Recorder:
    """Records every phase it is called in, under its own name."""

    def __init__(self, name: str, calls: list[str]) -> None:
        self.name = name
        self.calls = calls

    def validate(self, info: RuntimeInfo, job: Any) -> list[FieldError]:
        self.calls.append(f"{self.name}.validate")
        return []

    def enforce_ml_policy(self, info: RuntimeInfo, job: Any) -> None:
        self.calls.append(f"{self.name}.ml")

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: Any) -> None:
        self.calls.append(f"{self.name}.pod_group")

    def enforce_pod_spec(self, info: RuntimeInfo, job: Any) -> None:
        self.calls.append(f"{self.name}.pod_spec")

    def pre_build(self, info: RuntimeInfo, job: Any, observed: Observed) -> None:
        self.calls.append(f"{self.name}.pre_build")

    def build(self, info: RuntimeInfo, job: Any, observed: Observed) -> list[dict[str, Any]]:
        self.calls.append(f"{self.name}.build")
        return [{"kind": self.name}]


class Refuses:
    """Always reports two field errors."""

    name = "Refuses"

    def validate(self, info: RuntimeInfo, job: Any) -> list[FieldError]:
        return [FieldError("spec.a", "bad"), FieldError("spec.b", "worse")]


def test_phases_run_in_order_and_plugins_in_tuple_order() -> None:
    calls: list[str] = []
    plugins = (Recorder("one", calls), Recorder("two", calls))
    objects = render_of(make_job(), runtime_doc("torch-distributed"), plugins=plugins)
    assert calls == [
        "one.validate",
        "two.validate",
        "one.ml",
        "two.ml",
        "one.pod_group",
        "two.pod_group",
        "one.pod_spec",
        "two.pod_spec",
        "one.pre_build",
        "two.pre_build",
        "one.build",
        "two.build",
    ]
    assert [obj["kind"] for obj in objects] == ["ConfigMap", "one", "two"]


def test_validation_errors_of_all_plugins_are_gathered() -> None:
    plugins = (Refuses(), Refuses())
    admission = admitted(make_job(), runtime_doc("torch-distributed"), plugins=plugins)
    with pytest.raises(InvalidTrainJobError) as raised:
        admission.raise_errors()
    assert [str(error) for error in raised.value.errors] == ["spec.a: bad", "spec.b: worse"] * 2
