"""update_trainjob_status: to the job's progress file locally, nothing outside a job."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import update_trainjob_status
from trainer_sdk.progress import SERVER_TOKEN_ENV, SERVER_URL_ENV, STATUS_FILE_ENV


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


def test_in_a_cluster_it_posts_to_the_status_endpoint_with_the_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    received: list[tuple[str, dict[str, Any]]] = []

    class Endpoint(BaseHTTPRequestHandler):
        """Records each POST and answers 200."""

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((self.headers.get("Authorization", ""), body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    monkeypatch.delenv(STATUS_FILE_ENV, raising=False)
    monkeypatch.setenv(SERVER_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}/status")
    monkeypatch.setenv(SERVER_TOKEN_ENV, str(token))
    try:
        assert update_trainjob_status(50, 30, {"loss": 1.5}) is True
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()
    [(authorization, body)] = received
    assert authorization == "Bearer sa-token"
    status = body["trainerStatus"]
    assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (50, 30)
    assert status["metrics"] == [{"name": "loss", "value": "1.5"}]
