"""The UI in a real browser: a local two-node job that logs metrics, watched live, then stopped."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.ui import UiServer

pytestmark = pytest.mark.e2e

STEPS = 40
# Bounds for a loaded 2-core machine: the job's interpreters and torchrun start in seconds when
# idle and in about a minute under load; the page polls every 2 s.
START_SECONDS = 240
SEE_SECONDS = 120
ARTIFACTS_ENV = "TRAINER_UI_ARTIFACTS"


def train(steps: int) -> None:
    """Logs ``steps`` losses on rank 0, a line per step on each rank, then waits to be stopped."""
    import os
    import time

    from trainer_sdk import log_metrics, update_trainjob_status

    rank = os.environ["RANK"]
    for step in range(steps):
        log_metrics({"loss": 2.0 / (step + 1), "lr": 0.1 * 0.97**step}, step=step)
        print(f"rank {rank} step {step} loss {2.0 / (step + 1):.4f}", flush=True)
        update_trainjob_status(int(100 * (step + 1) / steps), int(0.1 * (steps - step)))
        time.sleep(0.1)
    print(f"rank {rank} logged {steps} steps", flush=True)
    time.sleep(600)


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: $TRAINER_UI_ARTIFACTS (kept by CI) or the test's tmp_path."""
    folder = Path(os.environ.get(ARTIFACTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_running_job_shows_live_logs_and_its_loss_curve_then_stops(
    tmp_path: Path, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    name = client.train(trainer=CustomTrainer(func=train, func_args={"steps": STEPS}, num_nodes=2))
    server = start_ui(client)
    shots = artifacts(tmp_path)
    try:
        browser.get(server.url)
        row_status = (By.CSS_SELECTOR, f'tr[data-job="{name}"] td.status .badge')
        WebDriverWait(browser, START_SECONDS).until(
            seen.text_to_be_present_in_element(row_status, "Running")
        )
        browser.save_screenshot(str(shots / "job-list.png"))

        browser.find_element(By.LINK_TEXT, name).click()
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "log"), "rank 0 step")
        )
        chart = (By.CSS_SELECTOR, '.chart[data-metric="loss"]')
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element_attribute(chart, "data-points", str(STEPS))
        )
        assert browser.find_element(*chart).find_elements(By.TAG_NAME, "canvas")
        assert browser.find_elements(By.CSS_SELECTOR, '.chart[data-metric="lr"]')
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "log"), f"rank 0 logged {STEPS} steps")
        )
        browser.save_screenshot(str(shots / "job-page.png"))

        Select(browser.find_element(By.ID, "log-step")).select_by_value("node-1")
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "log"), "rank 1 step")
        )
        assert "rank 0 step" not in browser.find_element(By.ID, "log").text
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "log"), f"rank 1 logged {STEPS} steps")
        )
        browser.find_element(By.ID, "log-search").send_keys("step 39")
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "log-count"), "1 matching")
        )
        download = browser.find_element(By.ID, "log-download").get_attribute("href")
        assert download.endswith(f"/api/jobs/{name}/logs?step=node-1&download=1")

        browser.find_element(By.ID, "stop").click()
        WebDriverWait(browser, SEE_SECONDS).until(seen.alert_is_present()).accept()
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "job-status"), "Stopped")
        )
        browser.save_screenshot(str(shots / "job-stopped.png"))
        assert client.get_job(name).status == "Stopped"
        assert "Stopped" in [event.reason for event in client.get_job_events(name)]
    finally:
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's
