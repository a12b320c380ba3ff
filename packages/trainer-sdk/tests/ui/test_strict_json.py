"""Every JSON answer of the UI is strict JSON (what a browser's ``JSON.parse`` reads): a job and
an optimization whose values are NaN and infinite, every API route the server documents asked,
each answer parsed by a parser that refuses ``NaN`` and ``Infinity``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.optimizer import (
    GridSearch,
    OptimizerClient,
    Search,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.ui import UiServer
from trainer_sdk.ui import server as server_module
from trainer_sdk.ui.strict_json import dumps

from .test_server import call

pytestmark = pytest.mark.e2e


def strict(text: str | bytes) -> Any:
    """``text`` parsed as RFC 8259 JSON: NaN, Infinity and -Infinity are refused."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null_with_their_name_beside_them() -> None:
    document = {"best": math.nan, "curve": {"y": [1.0, math.inf, -math.inf]}, "rows": [math.nan]}
    assert strict(dumps(document)) == {
        "best": None,
        "bestNonFinite": "NaN",
        "curve": {"y": [1.0, None, None], "yNonFinite": {"1": "Infinity", "2": "-Infinity"}},
        "rows": [None],
        "rowsNonFinite": {"0": "NaN"},
    }
    with pytest.raises(ValueError, match="not strict JSON: NaN"):
        strict(json.dumps(document))  # what the server sent before


def diverging(lr: str) -> None:
    """A trial whose loss is NaN (a diverged run) for large learning rates."""
    import math

    from trainer_sdk import log_metrics

    value = float(lr)
    log_metrics({"loss": math.nan if value > 0.5 else value, "grad": math.inf}, step=1)
    print("loss reported")


@pytest.fixture(scope="module")
def diverged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TrainerClient, str]]:
    """An optimization of two trials, one diverged (NaN loss, infinite gradient norm)."""
    config = LocalBackendConfig(root=tmp_path_factory.mktemp("strict"))
    optimizer = OptimizerClient(config)
    name = optimizer.optimize(
        TrainJobTemplate(trainer=CustomTrainer(func=diverging)),
        trial_config=TrialConfig(num_trials=2, parallel_trials=2),
        search_space={"lr": Search.choice([0.9, 0.1])},
        algorithm=GridSearch(),
    )
    optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    yield TrainerClient(config), name


# Each route the server's docstring lists, as this test asks it ({job}: the diverged trial).
ASKED = {
    "GET  /api/info": ["/api/info"],
    "GET  /api/jobs?q=&status=&sort=&order=&offset=&limit=": ["/api/jobs", "/api/jobs?q=x"],
    "GET  /api/jobs/NAME": ["/api/jobs/{job}", "/api/jobs/nosuchjob"],
    "GET  /api/jobs/NAME/metrics": ["/api/jobs/{job}/metrics"],
    "GET  /api/jobs/NAME/resources": ["/api/jobs/{job}/resources"],
    "GET  /api/jobs/NAME/logs?step=S": ["/api/jobs/{job}/logs"],  # text, but without S: JSON
    "GET  /api/jobs/NAME/logs/search?step=S&q=TEXT": [
        "/api/jobs/{job}/logs/search?step=node&q=loss"
    ],
    "GET  /api/jobs/NAME/logs/stream?step=S": ["/api/jobs/{job}/logs/stream?step=node"],
    "POST /api/jobs/NAME/stop": ["POST /api/jobs/nosuchjob/stop"],
    "POST /api/jobs/NAME/delete": ["POST /api/jobs/nosuchjob/delete"],
    "GET  /api/runtimes": ["/api/runtimes"],
    "GET  /api/optimizations[/NAME]": [
        "/api/optimizations",
        "/api/optimizations/{optimization}",
        "/api/optimizations/nosuchjob",
    ],
}


def documented_routes() -> list[str]:
    doc = server_module.__doc__ or ""
    return [match[0].strip() for match in re.finditer(r"^(?:GET|POST) +/api/\S+", doc, re.M)]


def test_every_api_answer_is_strict_json(
    diverged: tuple[TrainerClient, str], start_ui: Callable[..., UiServer]
) -> None:
    client, name = diverged
    assert sorted(ASKED) == sorted(documented_routes())  # a new route must be asked here
    server = start_ui(client)
    job = next(t.name for t in OptimizerClient(client.backend.config).get_job(name).trials
               if t.parameters["lr"] == "0.9")  # fmt: skip
    answers = {}
    for paths in ASKED.values():
        for asked in paths:
            method, _, path = asked.rpartition(" ")
            path = path.format(job=job, optimization=name)
            status, headers, body = call(
                server, path, method or "GET", {"X-Trainer-UI": "1"} if method else None
            )
            kind = headers.get("Content-Type", "")
            if kind.startswith("text/event-stream"):
                events = [
                    line[6:] for line in body.decode().splitlines() if line.startswith("data: ")
                ]
                answers[path] = [strict(event) for event in events]
            elif kind.startswith("application/json"):
                answers[path] = strict(body)
            else:
                raise AssertionError(f"{path} answered {status} {kind}, not JSON")
    detail = answers[f"/api/optimizations/{name}"]
    (nan_trial,) = [t for t in detail["trialList"] if t["name"] == job]
    assert (nan_trial["objective"], nan_trial["objectiveNonFinite"]) == (None, "NaN")
    assert detail["bestTrial"] != job and detail["best"] == 0.1
    assert len(answers) == sum(map(len, ASKED.values()))
