"""A failed job's page leads with the user's exception, the rank and step that raised it, and
that rank's traceback, and opens the failing step's log (issue 24, "a failed job hides its
cause")."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.errors import JobFailedError
from trainer_sdk.ui import UiServer

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 300
SEE_SECONDS = 60


def fail_on_rank_one() -> None:
    """Every rank logs three steps (the failing one too), then rank 1 raises; rank 0 waits."""
    import os
    import time

    from trainer_sdk import log_metrics

    rank = int(os.environ["RANK"])
    for step in range(3):
        log_metrics({"loss": 1.0 / (step + 1)}, step=step, all_ranks=True)
    if rank == 1:
        raise ValueError("bad batch 3 on purpose")
    time.sleep(120)


def test_a_failed_job_leads_with_its_exception_rank_and_traceback(
    tmp_path: Path, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    try:
        name = client.train(trainer=CustomTrainer(func=fail_on_rank_one, num_nodes=2))
        with pytest.raises(JobFailedError) as raised:
            client.wait_for_job_status(name, timeout=WAIT_SECONDS)
        server = start_ui(client)

        with urllib.request.urlopen(f"{server.url.rstrip('/')}/api/jobs/{name}") as response:
            detail = json.loads(response.read())
        failure = detail["failure"]
        assert failure["exception"] == "ValueError: bad batch 3 on purpose"
        # the rank as JobFailedError read it from the log (tagged [rankN]: where torchrun runs
        # several processes on a node; a node of one process is known by its step alone)
        assert (failure["rank"], failure["step"]) == (raised.value.rank, raised.value.step)
        assert failure["step"] == "node-1"
        assert failure["trainingStep"] == 2
        assert any("raise ValueError" in line for line in failure["traceback"])
        for step in detail["steps"]:
            if step["status"] == "Failed" and step["name"] != failure["step"]:
                assert step["endedBy"] == failure["step"]

        browser.get(f"{server.url.rstrip('/')}/#/jobs/{name}")
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element((By.ID, "failure-exception"), "bad batch 3")
        )
        where = browser.find_element(By.ID, "failure-where").text
        assert "step node-1" in where and "after training step 2" in where
        assert "raise ValueError" in browser.find_element(By.ID, "failure-traceback").text
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.presence_of_element_located((By.ID, "log-step"))
        )
        chosen = Select(browser.find_element(By.ID, "log-step")).first_selected_option
        assert chosen.get_attribute("value") == failure["step"]
        assert browser.title.startswith(f"{name} · Failed")
    finally:
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's
