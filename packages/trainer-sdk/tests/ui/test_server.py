"""The UI's HTTP API over a job of the in-memory backend (what the local backend's job "hello"
prints): lists, details, YAML, logs (text, download, events), writes, and the access rules on
the wire."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.backends.memory import InMemoryBackend, MemoryJob
from trainer_sdk.ui import UiServer

WAIT_SECONDS = 180
JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "hello"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 1, "command": ["bash", "-c", "echo hello; echo world"]},
    },
}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def call(
    server: UiServer, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one request (errors are answers too)."""
    base = server.url.split("/?")[0].rstrip("/")
    request = urllib.request.Request(f"{base}{path}", method=method, headers=headers or {})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def run_hello(job: MemoryJob) -> None:
    """What ``JOB``'s command does: two lines, then it completes."""
    job.start()
    job.log("node-0", "hello", "world")
    job.complete()


@pytest.fixture
def finished_job() -> TrainerClient:
    client = TrainerClient(backend=InMemoryBackend(run_hello))
    client.submit(JOB)
    client.wait_for_job_status("hello", timeout=WAIT_SECONDS)
    return client


def test_the_api_shows_the_job_its_objects_and_logs(
    finished_job: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(finished_job)
    status, _, body = call(server, "/api/jobs")
    [row] = json.loads(body)
    assert (status, row["name"], row["status"], row["nodes"]) == (200, "hello", "Complete", 1)
    assert row["duration"] is not None and row["duration"] <= row["age"]

    detail = json.loads(call(server, "/api/jobs/hello")[2])
    assert [step["name"] for step in detail["steps"]] == ["node-0"]
    assert "kind: TrainJob" in detail["trainjobYaml"]
    assert "kind: JobSet" in detail["jobsetYaml"]
    assert [c["type"] for c in detail["conditions"] if c["status"] == "True"] == ["Complete"]

    status, headers, text = call(server, "/api/jobs/hello/logs?step=node-0&download=1")
    assert status == 200 and text.decode().splitlines()[-2:] == ["hello", "world"]
    assert headers["Content-Disposition"] == 'attachment; filename="hello-node-0.log"'

    status, headers, stream = call(server, "/api/jobs/hello/logs/stream?step=node-0")
    assert headers["Content-Type"].startswith("text/event-stream")
    *batches, end = stream.decode().strip().split("\n\n")
    lines = [line for event in batches for line in json.loads(event.removeprefix("data: "))]
    assert (lines[-2:], end) == (["hello", "world"], "event: end\ndata: {}")

    assert json.loads(call(server, "/api/jobs/hello/metrics")[2]) == {"count": 0, "metrics": {}}
    runtimes = json.loads(call(server, "/api/runtimes")[2])
    assert "torch-distributed" in [runtime["name"] for runtime in runtimes]


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        pytest.param("/api/jobs/nope", 404, "nope", id="unknown-job"),
        pytest.param("/api/jobs/hello/logs?step=node-9", 400, "no step 'node-9'", id="bad-step"),
        pytest.param("/api/jobs/hello/logs", 400, "step: the query needs", id="no-step"),
        pytest.param("/static/../server.py", 404, "no file", id="escape"),
        pytest.param("/static/%2e%2e/server.py", 404, "no file", id="escape-encoded"),
    ],
)
def test_bad_requests_say_what_is_wrong(
    finished_job: TrainerClient,
    start_ui: Callable[..., UiServer],
    path: str,
    status: int,
    message: str,
) -> None:
    answer, _, body = call(start_ui(finished_job), path)
    assert answer == status and message in body.decode()


def test_the_page_and_the_vendored_chart_library_are_served(
    tmp_path: Path, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(TrainerClient(LocalBackendConfig(root=tmp_path)))
    status, headers, page = call(server, "/")
    assert status == 200 and b"/static/vendor/uPlot.iife.min.js" in page
    assert headers["Content-Security-Policy"].startswith("default-src 'self'")
    status, _, script = call(server, "/static/vendor/uPlot.iife.min.js")
    assert status == 200 and b"uPlot" in script


def test_a_token_is_asked_for_then_kept_in_a_cookie(
    tmp_path: Path, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(TrainerClient(LocalBackendConfig(root=tmp_path)), token="t0ken")
    assert call(server, "/api/jobs")[0] == 401
    status, headers, _ = call(server, "/?token=t0ken")
    assert (status, headers["Location"]) == (303, "/")
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    assert call(server, "/api/jobs", headers={"Cookie": cookie})[0] == 200


def test_writes_need_the_header_and_a_read_only_ui_refuses_them(
    finished_job: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    read_only = start_ui(finished_job, allow_delete=False)
    write = {"X-Trainer-UI": "1"}
    assert call(read_only, "/api/jobs/hello/delete", "POST")[0] == 403
    status, _, body = call(read_only, "/api/jobs/hello/delete", "POST", write)
    assert status == 403 and b"read-only" in body
    assert json.loads(call(read_only, "/api/info")[2])["canDelete"] is False

    server = start_ui(finished_job)
    assert call(server, "/api/jobs/hello/stop", "POST", write)[0] == 200
    assert finished_job.get_job("hello").status == "Complete"  # stopping a finished job keeps it
    assert call(server, "/api/jobs/hello/delete", "POST", write)[0] == 200
    assert json.loads(call(server, "/api/jobs")[2]) == []


def test_a_log_is_searched_on_the_server_with_line_numbers(
    finished_job: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(finished_job)
    status, _, body = call(server, "/api/jobs/hello/logs/search?step=node-0&q=WORLD")
    answer = json.loads(body)
    assert status == 200 and answer["truncated"] is False
    assert [match["text"] for match in answer["matches"]] == ["world"]
    lines = call(server, "/api/jobs/hello/logs?step=node-0")[2].decode().splitlines()
    assert lines[answer["matches"][0]["line"] - 1] == "world"
    status, _, body = call(server, "/api/jobs/hello/logs/search?step=node-0")
    assert status == 400 and b"q: the query needs" in body


def test_the_favicon_is_served(tmp_path: Path, start_ui: Callable[..., UiServer]) -> None:
    server = start_ui(TrainerClient(LocalBackendConfig(root=tmp_path)))
    status, headers, icon = call(server, "/favicon.ico")
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml")
    assert icon.startswith(b"<svg")
