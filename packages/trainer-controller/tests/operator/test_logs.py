"""Structured logs."""

from __future__ import annotations

import json
import logging

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
