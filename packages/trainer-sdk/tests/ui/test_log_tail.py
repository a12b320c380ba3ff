"""A long log opens on its tail and loads earlier lines by range (issue 24: a 100,000-line log
opens in under a second): the API's ``tail``, ``start`` and ``count``, and the panel in Chromium."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from trainer_sdk import TrainerClient
from trainer_sdk.backends.memory import InMemoryBackend, MemoryJob
from trainer_sdk.ui import UiServer

WAIT_SECONDS = 240
SEE_SECONDS = 120
LINES = 30_000
WINDOW = 5000  # app.js LOG_WINDOW
EARLIER = 2000  # app.js EARLIER_LINES


def run_chatty(job: MemoryJob) -> None:
    """What the job's command prints (after a line of the backend's own, as the local backend
    leads with), then it completes."""
    job.start()
    job.log("node-0", "[trainer-sdk] image recorded", *(f"line {i}" for i in range(LINES)))
    job.complete()


@pytest.fixture(scope="module")
def long_log() -> TrainerClient:
    """A finished job whose one step printed ``LINES`` numbered lines (in memory)."""
    client = TrainerClient(backend=InMemoryBackend(run_chatty))
    code = f"for i in range({LINES}): print(f'line {{i}}')"
    client.submit(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "chatty"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 1, "command": ["python", "-c", code]},
            },
        }
    )
    client.wait_for_job_status("chatty", timeout=WAIT_SECONDS)
    return client


def fetch(server: UiServer, path: str) -> tuple[int, bytes]:
    """Status and body of a GET (errors are answers too)."""
    try:
        with urllib.request.urlopen(f"{server.url.rstrip('/')}{path}", timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def events(stream: bytes) -> list[tuple[str, Any]]:
    """(event, parsed data) per server-sent event."""
    found = []
    for block in stream.decode().strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((fields.get("event", "message"), json.loads(fields["data"])))
    return found


def test_the_stream_starts_at_the_tail_and_says_how_many_lines_it_left_out(
    long_log: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(long_log)
    status, stream = fetch(server, "/api/jobs/chatty/logs/stream?step=node-0&tail=10")
    assert status == 200
    received = events(stream)
    total = len(fetch(server, "/api/jobs/chatty/logs?step=node-0")[1].splitlines())
    assert total >= LINES  # the backend may lead with a line of its own
    assert received[0] == ("skipped", total - 10)
    assert [line for kind, batch in received if kind == "message" for line in batch] == [
        f"line {i}" for i in range(LINES - 10, LINES)
    ]
    assert received[-1][0] == "end"
    _, whole = fetch(server, "/api/jobs/chatty/logs/stream?step=node-0")
    assert events(whole)[0][0] == "message"  # without tail: no skipped event, every line
    _, short = fetch(server, f"/api/jobs/chatty/logs/stream?step=node-0&tail={LINES * 2}")
    assert events(short)[0] == ("skipped", 0)


def test_a_range_of_lines_is_served_by_number(
    long_log: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(long_log)
    status, body = fetch(server, "/api/jobs/chatty/logs?step=node-0&start=5&count=3")
    assert status == 200 and body.decode() == "line 4\nline 5\nline 6\n"  # after the header line
    status, body = fetch(server, "/api/jobs/chatty/logs?step=node-0&start=x")
    assert status == 400 and b"start: expected a whole number" in body
    status, body = fetch(server, "/api/jobs/chatty/logs/stream?step=node-0&tail=-1")
    assert status == 400 and b"tail: expected a whole number" in body


@pytest.mark.e2e
def test_the_panel_opens_on_the_tail_and_loads_earlier_lines_on_scroll(
    long_log: TrainerClient, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    server = start_ui(long_log)
    browser.get(f"{server.url.rstrip('/')}/#/jobs/chatty")
    total = len(fetch(server, "/api/jobs/chatty/logs?step=node-0")[1].splitlines())
    shown = f"{total} lines, lines {total - WINDOW + 1}-{total} shown (ended)"
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element((By.ID, "log-count"), shown)
    )
    log = browser.find_element(By.ID, "log")
    held = "const d = document.getElementById('log').dataset; return [d.held, d.first]"
    assert browser.execute_script(held) == [str(WINDOW), str(total - WINDOW)]
    rows = "return [...document.querySelectorAll('#log .line')].map((row) => row.textContent)"
    in_sight = browser.execute_script(rows)
    assert in_sight[-1] == f"line {LINES - 1}"  # following: the end is in sight
    assert len(in_sight) < 100  # only the rows in sight are in the DOM, not the 5,000 held
    browser.execute_script("arguments[0].scrollTop = 0", log)
    earlier = f"lines {total - WINDOW - EARLIER + 1}-{total} shown"
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element((By.ID, "log-count"), earlier)
    )
    assert browser.execute_script(held) == [str(WINDOW + EARLIER), str(total - WINDOW - EARLIER)]
    # The line that was on top stays on top: the earlier lines are above it.
    top = (
        "const box = arguments[0].getBoundingClientRect();"
        "return document.elementFromPoint(box.left + 20, box.top + 12).textContent"
    )
    WebDriverWait(browser, SEE_SECONDS).until(
        lambda driver: driver.execute_script(top, log) == f"line {LINES - WINDOW}"
    )
    assert not browser.find_element(By.ID, "log-follow").is_selected()
