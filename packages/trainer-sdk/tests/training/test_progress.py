"""update_trainjob_status: to the job's progress file locally, nothing outside a job."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import update_trainjob_status
from trainer_sdk.training import progress, trainer_status
from trainer_sdk.training.progress import SERVER_TOKEN_ENV, SERVER_URL_ENV, STATUS_FILE_ENV


def test_outside_a_trainjob_it_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATUS_FILE_ENV, raising=False)
    monkeypatch.delenv(SERVER_URL_ENV, raising=False)
    assert update_trainjob_status(10) is False


def test_local_job_gets_clamped_progress_eta_and_metrics(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "progress.json"
    monkeypatch.setenv(STATUS_FILE_ENV, str(target))
    assert update_trainjob_status(150, -3, {"loss": 0.25, "epoch": 2}) is True
    written = json.loads(target.read_text())
    assert written["progressPercentage"] == 100
    assert written["estimatedRemainingSeconds"] == 0
    assert written["metrics"] == [
        {"name": "loss", "value": "0.25"},
        {"name": "epoch", "value": "2"},
    ]


def test_bad_progress_names_the_argument(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(STATUS_FILE_ENV, str(tmp_path / "p.json"))
    with pytest.raises(ValueError, match="progress_percent"):
        update_trainjob_status("half")  # type: ignore[arg-type]


class Endpoint(ThreadingHTTPServer):
    """A status endpoint on loopback: records each POST and answers with ``answers`` in turn."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.answers: list[tuple[int, dict[str, str]]] = []
        received, answers = self.received, self.answers

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received.append((self.headers.get("Authorization", ""), body))
                code, headers = answers.pop(0) if answers else (200, {})
                self.send_response(code)
                for key, value in {"Content-Length": "0", **headers}.items():
                    self.send_header(key, value)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        super().__init__(("127.0.0.1", 0), Handler)

    def progress(self) -> list[int]:
        return [body["trainerStatus"].get("progressPercentage") for _, body in self.received]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(trainer_status, "_throttle", trainer_status._PostThrottle(clock))
    return clock


@pytest.fixture
def endpoint(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    clock: Clock,
    serve: Callable[[HTTPServer], str],
) -> Endpoint:
    server = Endpoint()
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    monkeypatch.delenv(STATUS_FILE_ENV, raising=False)
    monkeypatch.setenv(SERVER_URL_ENV, f"{serve(server)}/status")
    monkeypatch.setenv(SERVER_TOKEN_ENV, str(token))
    return server


def test_in_a_cluster_it_posts_to_the_status_endpoint_with_the_token(endpoint: Endpoint) -> None:
    assert update_trainjob_status(50, 30, {"loss": 1.5}) is True
    [(authorization, body)] = endpoint.received
    assert authorization == "Bearer sa-token"
    status = body["trainerStatus"]
    assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (50, 30)
    assert status["metrics"] == [{"name": "loss", "value": "1.5"}]


def test_reports_every_step_are_throttled_but_the_final_one_always_goes(
    endpoint: Endpoint, clock: Clock
) -> None:
    assert [update_trainjob_status(step) for step in (1, 2, 3)] == [True, False, False]
    clock.now += progress.MIN_POST_INTERVAL
    assert update_trainjob_status(4) is True
    assert update_trainjob_status(100) is True  # within the interval, but final
    assert endpoint.progress() == [1, 4, 100]


def test_a_429_holds_reports_back_for_its_retry_after(endpoint: Endpoint, clock: Clock) -> None:
    endpoint.answers.append((429, {"Retry-After": "30"}))
    assert update_trainjob_status(10) is False
    clock.now += 29
    assert update_trainjob_status(20) is False  # not even sent
    clock.now += 1
    assert update_trainjob_status(30) is True
    assert endpoint.progress() == [10, 30]
