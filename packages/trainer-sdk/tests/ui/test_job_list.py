"""The job list as experiments: parameters, labels and latest metrics as columns; search, sort,
paging and ETag revalidation on the server (issue 24, "runs cannot be told apart" and "the job
list is slow at scale")."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, Labels, LocalBackendConfig, Name, TrainerClient
from trainer_sdk.backends.memory import InMemoryBackend, MemoryJob
from trainer_sdk.manifests.trainjobs import command_for_function, function_args
from trainer_sdk.ui import UiServer, views
from trainer_sdk.ui.joblist import JobList

WAIT_SECONDS = 240
LEARNING_RATES = (0.3, 0.01, 0.1)


def fit(lr: float, team: str) -> None:
    """Logs a loss that depends on ``lr``."""
    from trainer_sdk import log_metrics

    for step in range(3):
        log_metrics({"loss": lr * (3 - step)}, step=step)


def get(server: UiServer, path: str, headers: dict[str, str] | None = None) -> Any:
    """Status, headers and the parsed body (None for an empty one)."""
    base = server.url.rstrip("/")
    request = urllib.request.Request(f"{base}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return response.status, response.headers, json.loads(body) if body else None
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, error.headers, json.loads(body) if body else None


def run_fit(job: MemoryJob) -> None:
    """What ``fit`` does with the arguments the job's command carries, then it completes."""
    args = function_args(job.manifest["spec"]["trainer"]["command"]) or {}
    job.start()
    for step in range(3):
        job.record(step, loss=args["lr"] * (3 - step))
    job.complete()


@pytest.fixture(scope="module")
def sweep() -> TrainerClient:
    """Three finished jobs of one sweep, one learning rate each (in memory: ``run_fit``)."""
    client = TrainerClient(backend=InMemoryBackend(run_fit))
    names = [
        client.train(
            trainer=CustomTrainer(func=fit, func_args={"lr": lr, "team": "nlp"}),
            options=[Labels({"sweep": "lr"})],
        )
        for lr in LEARNING_RATES
    ]
    for name in names:
        client.wait_for_job_status(name, timeout=WAIT_SECONDS)
    return client


def test_rows_carry_func_args_labels_and_latest_metrics(
    sweep: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    status, headers, rows = get(start_ui(sweep), "/api/jobs")
    assert status == 200 and headers["X-Total-Count"] == "3"
    assert sorted(row["funcArgs"]["lr"] for row in rows) == sorted(LEARNING_RATES)
    assert all(row["labels"]["sweep"] == "lr" for row in rows)
    by_lr = {row["funcArgs"]["lr"]: row for row in rows}
    assert by_lr[0.3]["latest"] == {"loss": pytest.approx(0.3)}  # the value at step 2
    created = [row["created"] for row in rows]
    assert created == sorted(created, reverse=True)  # newest first


def test_the_server_sorts_searches_and_pages(
    sweep: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(sweep)
    _, _, rows = get(server, "/api/jobs?sort=metric:loss&order=asc")
    assert [row["funcArgs"]["lr"] for row in rows] == [0.01, 0.1, 0.3]
    _, headers, page = get(server, "/api/jobs?sort=arg:lr&order=desc&offset=1&limit=1")
    assert ([row["funcArgs"]["lr"] for row in page], headers["X-Total-Count"]) == ([0.1], "3")
    _, headers, found = get(server, "/api/jobs?q=lr=0.01%20nlp")
    assert [row["funcArgs"]["lr"] for row in found] == [0.01]
    assert headers["X-Total-Count"] == "1"
    status, _, error = get(server, "/api/jobs?sort=colour")
    assert status == 400 and "sort: expected one of" in error["error"]
    status, _, error = get(server, "/api/jobs?limit=-1")
    assert status == 400 and "limit: expected a whole number" in error["error"]


def test_an_unchanged_list_revalidates_with_304(
    sweep: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(sweep)
    _, headers, _ = get(server, "/api/jobs?limit=2")
    tag = headers["ETag"]
    assert tag.startswith('W/"')
    status, again, body = get(server, "/api/jobs?limit=2", {"If-None-Match": tag})
    assert (status, body, again["ETag"]) == (304, None, tag)
    status, _, _ = get(server, "/api/jobs?limit=1", {"If-None-Match": tag})
    assert status == 200  # another page is another entity


def add_jobs(client: TrainerClient, names: list[str]) -> None:
    """A finished sweep job under each of ``names``."""
    for name in names:
        client.train(
            trainer=CustomTrainer(func=fit, func_args={"lr": 0.1, "team": "nlp"}),
            options=[Name(name)],
        )


def test_a_page_is_sliced_from_a_kept_selection_until_a_job_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = TrainerClient(backend=InMemoryBackend(run_fit))
    add_jobs(client, ["job-a", "job-b"])
    job_list = JobList(client)
    sorted_rows: list[str] = []  # the sort of each selection filtered and sorted
    select = views.select_rows

    def counted(rows: Any, query: str, status: str, sort: str, descending: bool) -> Any:
        sorted_rows.append(sort)
        return select(rows, query, status, sort, descending)

    monkeypatch.setattr(views, "select_rows", counted)
    by_name = ("", "", "name", False)
    now = datetime.now(timezone.utc)
    rows, total = job_list.page(by_name, 0, 1, now)
    assert ([row["name"] for row in rows], total) == (["job-a"], 2)
    version = job_list.index.version
    assert job_list.page(by_name, 1, 1, now)[0][0]["name"] == "job-b"
    assert sorted_rows == ["name"]  # the second page came from the kept selection
    assert job_list.index.version == version
    job_list.page(("", "", "created", True), 0, 50, now)
    assert sorted_rows == ["name", "created"]  # another selection is sorted once
    add_jobs(client, ["job-0"])
    rows, total = job_list.page(by_name, 0, 50, now)
    assert ([row["name"] for row in rows], total) == (["job-0", "job-a", "job-b"], 3)
    assert job_list.index.version > version and sorted_rows[-1] == "name"
    client.delete_job("job-a")
    assert [row["name"] for row in job_list.page(by_name, 0, 50, now)[0]] == ["job-0", "job-b"]


def test_function_args_reads_back_what_the_command_carries(tmp_path: Path) -> None:
    runtime = TrainerClient(LocalBackendConfig(root=tmp_path)).get_runtime("torch-distributed")
    command = command_for_function(runtime, fit, {"lr": 0.1, "team": "nlp"})
    assert function_args(command) == {"lr": 0.1, "team": "nlp"}
    assert function_args(command_for_function(runtime, fit)) is None
    assert function_args(["bash", "-c", "echo hello"]) is None


def row(name: str, lr: float | None, loss: float | None) -> dict[str, Any]:
    return {
        "name": name,
        "status": "Complete",
        "runtime": "torch-distributed",
        "labels": {},
        "funcArgs": {} if lr is None else {"lr": lr},
        "latest": {} if loss is None else {"loss": loss},
        "created": datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat(),
    }


@pytest.mark.parametrize(
    ("sort", "descending", "expected"),
    [
        pytest.param("arg:lr", False, ["b", "a", "c"], id="arg-ascending-missing-last"),
        pytest.param("arg:lr", True, ["a", "b", "c"], id="arg-descending-missing-last"),
        pytest.param("metric:loss", False, ["c", "a", "b"], id="metric"),
        pytest.param("name", True, ["c", "b", "a"], id="name"),
    ],
)
def test_select_rows_sorts_with_missing_values_last(
    sort: str, descending: bool, expected: list[str]
) -> None:
    rows = [row("a", 0.3, 0.5), row("b", 0.1, None), row("c", None, 0.2)]
    chosen = views.select_rows(rows, sort=sort, descending=descending)
    assert [item["name"] for item in chosen] == expected
