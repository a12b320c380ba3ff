"""The optimization pages: a real local optimization job (trials are local TrainJobs), its JSON
and the page in headless Chromium."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.optimizer import (
    OptimizerClient,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.ui import UiServer

from .test_browser import artifacts

pytestmark = pytest.mark.e2e

SEE_SECONDS = 120
STEPS = 6
GATES = str(Path(__file__).resolve().parents[1] / "optimizer")  # gates.py


def train(lr: float, width: str, gates: str, root: str) -> None:
    """A loss that falls with the step, lowest near lr=0.01, printed the way Katib reads it;
    each step waits until the optimizer has recorded (and judged) the one before, so that a
    pruned trial is stopped part way."""
    import math
    import sys

    sys.path.insert(0, gates)
    from gates import wait_until_recorded

    for step in range(1, 7):
        print(f"loss={(math.log10(lr) + 2) ** 2 + int(width) / 100 + 1 / step}", flush=True)
        wait_until_recorded(root, step)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TrainerClient, str]]:
    """Five trials, two at a time, successive halving from step 2: run to the end once."""
    root = tmp_path_factory.mktemp("optimization")
    config = LocalBackendConfig(root=root)
    optimizer = OptimizerClient(config)
    trainer = CustomTrainer(func=train, func_args={"gates": GATES, "root": str(root)})
    name = optimizer.optimize(
        TrainJobTemplate(runtime="torch-distributed", trainer=trainer),
        trial_config=TrialConfig(num_trials=5, parallel_trials=2),
        search_space={"lr": Search.loguniform(1e-4, 1.0), "width": Search.choice([1, 50])},
        algorithm=RandomSearch(random_state=3),
        early_stopping=SuccessiveHalving(min_resource=2, reduction_factor=2),
    )
    optimizer.wait_for_job_status(name, timeout=600, polling_interval=1)
    yield TrainerClient(config), name


def get(server: UiServer, path: str) -> tuple[int, Any]:
    request = urllib.request.Request(server.url.split("/?")[0].rstrip("/") + path)
    request.add_header("X-Trainer-UI", "1")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_api_lists_the_job_and_its_trials(
    finished: tuple[TrainerClient, str], start_ui: Callable[..., UiServer]
) -> None:
    client, name = finished
    server = start_ui(client)
    code, rows = get(server, "/api/optimizations")
    assert code == 200
    assert [(r["name"], r["status"], r["trials"], r["numTrials"]) for r in rows] == [
        (name, "Complete", 5, 5)
    ]
    code, job = get(server, f"/api/optimizations/{name}")
    assert code == 200
    trials = job["trialList"]
    assert [t["name"] for t in trials] == [f"{name}-{n}" for n in range(5)]
    complete = [t for t in trials if t["state"] == "Complete"]
    pruned = [t for t in trials if t["state"] == "Pruned"]
    assert len(complete) + len(pruned) == 5
    assert all(t["prunedAtStep"] is None for t in complete)
    assert all(isinstance(t["prunedAtStep"], int) for t in pruned)
    best = min(complete, key=lambda t: t["objective"])
    assert (job["bestTrial"], job["best"]) == (best["name"], best["objective"])
    for trial in trials:  # the curve is what the trial printed, step by step
        lr, width = float(trial["parameters"]["lr"]), int(trial["parameters"]["width"])
        curve = job["curves"][trial["name"]]
        assert curve["x"] == list(range(1, len(curve["x"]) + 1))
        expected = [(math.log10(lr) + 2) ** 2 + width / 100 + 1 / s for s in curve["x"]]
        assert curve["y"] == pytest.approx(expected, rel=1e-12)
        if trial["state"] == "Complete":
            assert len(curve["x"]) == STEPS
        else:  # judged at a rung it reached; stopped soon after
            assert trial["prunedAtStep"] in curve["x"]
    assert set(job["importance"]) == {"lr", "width"}
    assert sum(job["importance"].values()) == pytest.approx(1.0)
    assert get(server, "/api/optimizations/nosuchjob")[0] == 404


def test_the_page_shows_trials_best_charts_and_importance(
    finished: tuple[TrainerClient, str],
    tmp_path: Path,
    browser: Any,
    start_ui: Callable[..., UiServer],
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    client, name = finished
    server = start_ui(client)
    _, job = get(server, f"/api/optimizations/{name}")
    browser.get(server.url)
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.element_to_be_clickable((By.ID, "nav-optimizations"))
    ).click()
    row = (By.CSS_SELECTOR, f'tr[data-optimization="{name}"] td.status .badge')
    WebDriverWait(browser, SEE_SECONDS).until(seen.text_to_be_present_in_element(row, "Complete"))
    browser.find_element(By.LINK_TEXT, name).click()
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.presence_of_element_located((By.CSS_SELECTOR, "#trials tbody tr"))
    )
    shown = {
        tr.get_attribute("data-trial"): (
            tr.find_element(By.CSS_SELECTOR, "td.state").text,
            tr.find_element(By.CSS_SELECTOR, "td.pruned").text,
            tr.find_element(By.CSS_SELECTOR, 'td[data-parameter="lr"]').text,
        )
        for tr in browser.find_elements(By.CSS_SELECTOR, "#trials tbody tr")
    }
    assert shown == {
        t["name"]: (
            t["state"],
            "" if t["prunedAtStep"] is None else str(t["prunedAtStep"]),
            t["parameters"]["lr"],
        )
        for t in job["trialList"]
    }
    best = browser.find_elements(By.CSS_SELECTOR, "#trials tr.best")
    assert [tr.get_attribute("data-trial") for tr in best] == [job["bestTrial"]]
    assert job["bestTrial"] in browser.find_element(By.ID, "best").text
    by_trial = browser.find_element(By.ID, "objective-by-trial")
    complete = sum(t["state"] == "Complete" for t in job["trialList"])
    assert by_trial.get_attribute("data-points") == str(complete)
    assert by_trial.find_elements(By.TAG_NAME, "canvas")
    curves = browser.find_element(By.ID, "trial-curves")
    assert curves.get_attribute("data-curves") == "5"
    assert curves.find_elements(By.TAG_NAME, "canvas")
    # Parallel coordinates: an axis per parameter and one for the objective, a line per trial
    # that reported an objective, the best one drawn bold.
    coordinates = browser.find_element(By.ID, "parallel-coordinates")
    axes = coordinates.find_elements(By.CSS_SELECTOR, "g.axis")
    assert [a.get_attribute("data-axis") for a in axes] == ["lr", "width", "loss"]
    lines = coordinates.find_elements(By.TAG_NAME, "polyline")
    reported = [t["name"] for t in job["trialList"] if t["objective"] is not None]
    assert sorted(line.get_attribute("data-trial") for line in lines) == sorted(reported)
    assert coordinates.get_attribute("data-lines") == str(len(reported))
    (bold,) = coordinates.find_elements(By.CSS_SELECTOR, "polyline.best")
    assert bold.get_attribute("data-trial") == job["bestTrial"]
    # The lowest loss sits lowest on the objective axis (the last point of each line).
    last_y = {
        line.get_attribute("data-trial"): float(
            line.get_attribute("points").split()[-1].split(",")[1]
        )
        for line in lines
    }
    assert last_y[job["bestTrial"]] == max(last_y.values())
    bars = browser.find_elements(By.CSS_SELECTOR, "#importance .importance")
    assert sorted(b.get_attribute("data-parameter") for b in bars) == ["lr", "width"]
    browser.save_screenshot(str(artifacts(tmp_path) / "optimization-page.png"))
