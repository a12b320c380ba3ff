"""log_metrics: buffered on the training thread, flushed to the job's history or its status."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import log_metrics, update_trainjob_status
from trainer_sdk.training import metrics, progress, trainer_status
from trainer_sdk.training.metrics import (
    FileSink,
    MetricsLogger,
    format_entries,
    latest_values,
    read_history,
)
from trainer_sdk.training.progress import SERVER_TOKEN_ENV, SERVER_URL_ENV, STATUS_FILE_ENV
from waiting import wait_until


class Recorder(ThreadingHTTPServer):
    """A status endpoint on loopback that takes every report and keeps its trainerStatus."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        statuses = self.statuses

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                statuses.append(body["trainerStatus"])
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        super().__init__(("127.0.0.1", 0), Handler)


WAIT_SECONDS = 30.0


@pytest.fixture(autouse=True)
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test configures the process's logger from its own environment."""
    monkeypatch.setattr(metrics, "_default", None)
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", STATUS_FILE_ENV, SERVER_URL_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def job_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A local job's directory, as the supervisor announces it to training code."""
    monkeypatch.setenv(STATUS_FILE_ENV, str(tmp_path / "progress.json"))
    return tmp_path


def test_points_reach_the_file_in_order_with_steps(tmp_path: Path) -> None:
    logger = MetricsLogger([FileSink(tmp_path / "rank-0.jsonl")], flush_interval=3600)
    logger.log({"loss": 0.5, "lr": 1e-3}, step=10)
    logger.log({"loss": 0.25})  # the step after the last
    logger.flush()
    history = read_history(tmp_path)
    assert [(point.step, point.values) for point in history] == [
        (10, {"loss": 0.5, "lr": 1e-3}),
        (11, {"loss": 0.25}),
    ]
    assert latest_values(history) == {"loss": 0.25, "lr": 1e-3}


def test_the_background_thread_flushes_without_being_asked(job_dir: Path) -> None:
    metrics.default_logger().flush_interval = 0.05
    for step in range(5):
        log_metrics({"loss": 1.0 / (step + 1)}, step=step)
    wait_until(lambda: len(read_history(job_dir / "metrics")) >= 5, "five points", WAIT_SECONDS)
    assert [point.step for point in read_history(job_dir / "metrics")] == [0, 1, 2, 3, 4]


def test_other_ranks_record_only_when_they_opt_in(
    job_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    log_metrics({"loss": 1.0}, step=1)
    log_metrics({"loss": 2.0}, step=2, all_ranks=True)
    metrics.default_logger().flush()
    [point] = read_history(job_dir / "metrics")
    assert (point.rank, point.step, point.values) == (1, 2, {"loss": 2.0})
    assert (job_dir / "metrics" / "rank-1.jsonl").is_file()


def test_values_survive_the_round_trip_exactly(tmp_path: Path) -> None:
    values = {"loss": 0.1 + 0.2, "big": 1e300, "nan": float("nan"), "count": 3, 'a "b"': -0.0}
    (tmp_path / "rank-2.jsonl").write_text(format_entries(2, [(7, 12.5, values, True)]))
    [point] = read_history(tmp_path)
    assert (point.step, point.time, point.rank) == (7, 12.5, 2)
    assert point.values["loss"] == 0.1 + 0.2 and point.values["big"] == 1e300
    assert point.values["nan"] != point.values["nan"]
    assert (point.values["count"], point.values['a "b"']) == (3.0, 0.0)


@pytest.mark.parametrize(
    ("values", "step", "message"),
    [
        pytest.param({"loss": "high"}, None, r"metrics\['loss'\]: expected a number", id="text"),
        pytest.param([0.5], None, "metrics: expected a dict", id="not-a-dict"),
        pytest.param({"loss": 1.0}, 1.5, "step: expected an int", id="float-step"),
        pytest.param({"loss": 1.0}, True, "step: expected an int", id="bool-step"),
    ],
)
def test_bad_input_names_what_is_wrong(values: object, step: object, message: str) -> None:
    logger = MetricsLogger([], flush_interval=3600)
    with pytest.raises(ValueError, match=message):
        logger.log(values, step)  # type: ignore[arg-type]


def test_progress_reports_feed_the_same_history(job_dir: Path) -> None:
    assert update_trainjob_status(10, 90, {"loss": 1.0}) is True  # alone: steps 0, 1
    assert update_trainjob_status(20, 80, {"loss": 0.95}) is True
    log_metrics({"loss": 0.9}, step=5)
    # right after log_metrics, a report joins the step just logged
    assert update_trainjob_status(50, 10, {"loss": 0.7, "epoch": 1, "phase": "warmup"}) is True
    log_metrics({"loss": 0.6})
    metrics.default_logger().flush()
    assert [(point.step, point.values) for point in read_history(job_dir / "metrics")] == [
        (0, {"loss": 1.0}),
        (1, {"loss": 0.95}),
        (5, {"loss": 0.9}),
        (5, {"loss": 0.7, "epoch": 1.0}),
        (6, {"loss": 0.6}),
    ]


def test_a_line_still_being_written_is_not_read(tmp_path: Path) -> None:
    whole = format_entries(0, [(1, 1.0, {"loss": 1.0}, True)])
    (tmp_path / "rank-0.jsonl").write_text(whole + whole[:10])
    assert [point.step for point in read_history(tmp_path)] == [1]


def test_in_a_cluster_the_latest_values_go_to_the_status_with_the_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, serve: Callable[[HTTPServer], str]
) -> None:
    now = [1000.0]
    monkeypatch.setattr(trainer_status, "_throttle", trainer_status._PostThrottle(lambda: now[0]))
    monkeypatch.setattr(trainer_status, "_last_reported", {})
    server = Recorder()
    (tmp_path / "token").write_text("t")
    monkeypatch.setenv(SERVER_URL_ENV, f"{serve(server)}/status")
    monkeypatch.setenv(SERVER_TOKEN_ENV, str(tmp_path / "token"))
    assert update_trainjob_status(40, 60) is True
    now[0] += progress.MIN_POST_INTERVAL
    log_metrics({"loss": 0.5, "lr": 0.1}, step=1)
    log_metrics({"loss": 0.25}, step=2)
    metrics.default_logger().flush()
    log_metrics({"loss": 0.125}, step=3)
    metrics.default_logger().flush()  # within the interval: held back, sent with the next
    statuses = server.statuses
    assert len(statuses) == 2
    assert statuses[1]["progressPercentage"] == 40
    assert statuses[1]["estimatedRemainingSeconds"] == 60
    assert statuses[1]["metrics"] == [
        {"name": "loss", "value": "0.25"},
        {"name": "lr", "value": "0.1"},
    ]
    now[0] += progress.MIN_POST_INTERVAL
    log_metrics({"lr": 0.05}, step=4)
    metrics.default_logger().flush()
    assert server.statuses[-1]["metrics"] == [
        {"name": "loss", "value": "0.125"},
        {"name": "lr", "value": "0.05"},
    ]


def test_a_forked_child_starts_its_own_logger(job_dir: Path) -> None:
    log_metrics({"loss": 1.0}, step=0)
    parent = metrics.default_logger()
    pid = os.fork()
    if pid == 0:  # the child: a fresh logger, whose own thread flushes its points
        child = metrics.default_logger()
        child.log({"loss": 2.0}, step=1)
        child.close()
        os._exit(0 if child is not parent else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent.flush()
    assert [point.values["loss"] for point in read_history(job_dir / "metrics")] == [1.0, 2.0]
