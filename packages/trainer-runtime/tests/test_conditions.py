"""Conditions: the transition time moves only when the status changes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from trainer_runtime.conditions import format_time, parse_time, set_condition

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_transition_time_kept_while_status_is_unchanged() -> None:
    found: list = []
    set_condition(found, "Suspended", True, "Suspended", "m", T0)
    set_condition(found, "Suspended", True, "Suspended", "m2", T0 + timedelta(hours=1))
    assert found == [
        {
            "type": "Suspended",
            "status": "True",
            "reason": "Suspended",
            "message": "m2",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    set_condition(found, "Suspended", False, "Resumed", "r", T0 + timedelta(hours=2))
    assert found[0]["lastTransitionTime"] == "2026-01-01T02:00:00Z"
    assert (found[0]["status"], found[0]["reason"]) == ("False", "Resumed")


def test_times_round_trip_in_utc() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(moment) == "2026-03-04T03:06:07Z"
    assert parse_time("2026-03-04T03:06:07Z") == datetime(2026, 3, 4, 3, 6, 7, tzinfo=timezone.utc)
    assert parse_time(None) is None
