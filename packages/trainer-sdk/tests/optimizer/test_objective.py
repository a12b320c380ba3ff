"""Reading a trial's objective: log_metrics history, name=value stdout lines, status metrics."""

from __future__ import annotations

from trainer_sdk.optimizer.objective import observe, stdout_history
from trainer_sdk.training.metrics import MetricPoint


def test_stdout_pairs_are_steps_in_order() -> None:
    lines = [
        "epoch 1: loss=0.5 accuracy=0.7",
        "noise lr=1e-3x not-a-number=abc",
        "loss = 0.25",
        "val-loss=-1.5E-2 loss=.125",
    ]
    assert stdout_history(lines) == {
        "loss": {1: 0.5, 2: 0.25, 3: 0.125},
        "accuracy": {1: 0.7},
        "val-loss": {1: -0.015},
    }


def test_log_metrics_first_then_stdout_then_status() -> None:
    points = [
        MetricPoint(step=10, time=0.0, rank=0, values={"loss": 0.9}),
        MetricPoint(step=20, time=1.0, rank=0, values={"loss": 0.4}),
        MetricPoint(step=20, time=1.0, rank=1, values={"loss": 7.0}),
    ]
    observation = observe(
        points,
        ["loss=3.0", "acc=0.5"],
        {"f1": "0.8", "note": "ok"},
        ["loss", "acc", "f1", "note", "none"],
    )
    assert observation.steps == {"loss": {10: 0.9, 20: 0.4}, "acc": {1: 0.5}, "f1": {0: 0.8}}
    assert observation.latest("loss") == 0.4
    assert observation.latest("none") is None
    (loss,) = observation.summary(["loss"])
    assert (loss.min, loss.max, loss.latest) == ("0.4", "0.9", "0.4")
