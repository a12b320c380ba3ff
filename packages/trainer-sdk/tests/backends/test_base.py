"""Argument checks shared by every backend's wait_for_job_status."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_sdk.backends.base import check_wait_arguments


@pytest.mark.parametrize(
    ("status", "timeout", "interval", "message"),
    [
        pytest.param(set(), 10, 1, "status", id="empty-status"),
        pytest.param({"Done"}, 10, 1, r"\['Done'\] not in", id="unknown-status"),
        pytest.param({"Complete"}, 0, 1, "timeout", id="zero-timeout"),
        pytest.param({"Complete"}, 10, -1, "polling_interval", id="negative-interval"),
        pytest.param(
            {"Complete"}, 1, 5, "must not be greater than timeout", id="interval-over-timeout"
        ),
    ],
)
def test_bad_arguments_name_themselves(
    status: Any, timeout: Any, interval: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_wait_arguments(status, timeout, interval)


def test_good_arguments_pass() -> None:
    check_wait_arguments({"Complete", "Failed"}, 600, 2)
