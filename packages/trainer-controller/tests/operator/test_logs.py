"""Structured logs."""

from __future__ import annotations

import json
import logging

import kopf
import pytest
from trainer_controller.operator.logs import JsonFormatter


def test_one_json_object_per_record_with_extra_fields() -> None:
    record = logging.LogRecord(
        "trainer", logging.WARNING, __file__, 1, "reconcile %s", ("failed",), None
    )
    record.trainjob = "default/job"
    entry = json.loads(JsonFormatter().format(record))
    assert (entry["level"], entry["logger"], entry["msg"], entry["trainjob"]) == (
        "WARNING",
        "trainer",
        "reconcile failed",
        "default/job",
    )
    assert entry["time"].endswith("+00:00")


def test_a_per_object_record_from_kopf_is_one_short_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team", "uid": "0f0e"},
    }
    logger = kopf.ObjectLogger(body=kopf.Body(body), settings=kopf.OperatorSettings())
    with caplog.at_level(logging.INFO):
        logger.info("Handler 'reconcile' succeeded.")
    line = JsonFormatter().format(caplog.records[-1])
    entry = json.loads(line)
    assert entry["object"] == "TrainJob/team/job"
    assert entry["msg"] == "Handler 'reconcile' succeeded."
    assert "\n" not in line and len(line) < 250, line
