"""How a training process reports to its TrainJob's status (shared by ``progress`` and
``metrics``, and importing neither).

On the local backend a report is the job's ``progress.json`` (``TRAINER_SDK_STATUS_FILE``); in a
cluster it is posted to the controller's status endpoint (``KUBEFLOW_TRAINER_SERVER_URL``, with the
token at ``KUBEFLOW_TRAINER_SERVER_TOKEN`` and the CA at ``KUBEFLOW_TRAINER_SERVER_CA_CERT``), at
most once per ``MIN_POST_INTERVAL`` seconds, or later when the endpoint answers 429 with
``Retry-After``; a final report (100 %) is never held back.
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MAX_METRICS",
    "MIN_POST_INTERVAL",
    "SERVER_CA_ENV",
    "SERVER_TOKEN_ENV",
    "SERVER_URL_ENV",
    "STATUS_FILE_ENV",
    "report",
    "report_metrics",
    "trainer_status",
]

STATUS_FILE_ENV: Final = "TRAINER_SDK_STATUS_FILE"
SERVER_URL_ENV: Final = "KUBEFLOW_TRAINER_SERVER_URL"
SERVER_TOKEN_ENV: Final = "KUBEFLOW_TRAINER_SERVER_TOKEN"
SERVER_CA_ENV: Final = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
MAX_METRICS: Final = 256
MIN_POST_INTERVAL: Final = 5.0

_logger = logging.getLogger(__name__)


def trainer_status(
    progress_percent: int | None,
    estimated_remaining_seconds: int | None,
    metrics: dict[str, float | int | str] | None,
) -> dict[str, Any]:
    """The ``trainerStatus`` of one report; ValueError naming the argument for bad input."""
    status: dict[str, Any] = {"lastUpdatedTime": datetime.now(timezone.utc).isoformat()}
    if progress_percent is not None:
        if not isinstance(progress_percent, (int, float)):
            raise ValueError(
                f"progress_percent: expected a number from 0 to 100, got {progress_percent!r}"
            )
        status["progressPercentage"] = max(0, min(100, int(progress_percent)))
    if estimated_remaining_seconds is not None:
        if not isinstance(estimated_remaining_seconds, (int, float)):
            raise ValueError(
                "estimated_remaining_seconds: expected a number, "
                f"got {estimated_remaining_seconds!r}"
            )
        status["estimatedRemainingSeconds"] = max(0, int(estimated_remaining_seconds))
    if metrics:
        if not isinstance(metrics, dict):
            raise ValueError(
                f"metrics: expected a dict of name to value, got {type(metrics).__name__}"
            )
        items = list(metrics.items())[:MAX_METRICS]
        status["metrics"] = [{"name": str(name), "value": str(value)} for name, value in items]
    return status


class _PostThrottle:
    """When the next report may be posted: an interval after the last one, or the server's wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._not_before, self._lock = clock, float("-inf"), threading.Lock()

    def admits(self, final: bool) -> bool:
        with self._lock:
            return final or self._clock() >= self._not_before

    def wait(self, seconds: float) -> None:
        with self._lock:
            self._not_before = self._clock() + seconds


_throttle = _PostThrottle()
# What this process last reported besides metrics, carried by report_metrics' posts so that a
# metrics report does not erase the progress and ETA.
_last_reported: dict[str, Any] = {}


def _retry_after(error: urllib.error.HTTPError) -> float:
    try:
        return max(MIN_POST_INTERVAL, float(error.headers.get("Retry-After", "")))
    except ValueError:
        return MIN_POST_INTERVAL


def _post(url: str, status: dict[str, Any]) -> bool:
    token_path = os.environ.get(SERVER_TOKEN_ENV)
    headers = {"Content-Type": "application/json"}
    if token_path and os.path.exists(token_path):
        headers["Authorization"] = f"Bearer {Path(token_path).read_text().strip()}"
    ca_file = os.environ.get(SERVER_CA_ENV)
    context = (
        ssl.create_default_context(cafile=ca_file) if ca_file and os.path.exists(ca_file) else None
    )
    request = urllib.request.Request(
        url, data=json.dumps({"trainerStatus": status}).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            _throttle.wait(MIN_POST_INTERVAL)
            return bool(response.status == 200)
    except urllib.error.HTTPError as error:
        if error.code == 429:
            _throttle.wait(_retry_after(error))
        _logger.warning("update_trainjob_status: %s answered %s: %s", url, error.code, error.reason)
        return False
    except (urllib.error.URLError, OSError) as error:
        # Training must not stop because the status endpoint is unreachable; the warning says why.
        _logger.warning("update_trainjob_status: could not reach %s: %s", url, error)
        return False


def report(status: dict[str, Any]) -> bool:
    """Deliver one report (``trainer_status``) to the job; True when it reached it."""
    _last_reported.update(
        {
            key: status[key]
            for key in ("progressPercentage", "estimatedRemainingSeconds")
            if key in status
        }
    )
    if status_file := os.environ.get(STATUS_FILE_ENV):
        path = Path(status_file)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(status))
        os.replace(temporary, path)
        return True
    if url := os.environ.get(SERVER_URL_ENV):
        if not _throttle.admits(final=status.get("progressPercentage") == 100):
            return False
        return _post(url, status)
    return False


def report_metrics(latest: dict[str, float]) -> bool:
    """Post ``latest`` metric values (with the last progress and ETA) to a cluster job's status
    when the throttle admits it; True when the endpoint took it."""
    url = os.environ.get(SERVER_URL_ENV)
    if not url or not _throttle.admits(final=False):
        return False
    status = trainer_status(None, None, dict(latest))
    return _post(url, {**status, **_last_reported})
