"""Per-pod CPU and memory of a running local job (issue 24, "per-pod CPU and memory charts for
local jobs"): the backend samples the pod's process tree (``backends/local/test_usage.py``); the
job page charts it."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.ui import UiServer
from trainer_sdk.ui.resources import ResourceHistory

START_SECONDS = 240
SEE_SECONDS = 120
HELD_MIB = 200
# holds HELD_MIB of touched memory in a child process and keeps one core busy, until stopped
BUSY = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    f"'b = bytearray({HELD_MIB} << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\n"
    "import time\\ntime.sleep(600)'])\n"
    "print('started', flush=True)\n"
    "deadline = time.time() + 600\n"
    "while time.time() < deadline: sum(range(10000))\n"
)


def test_cpu_is_the_growth_of_cpu_time_over_wall_time() -> None:
    history = ResourceHistory(max_samples=2)
    history.record("job", {"pod": (10.0, 1 << 20)}, now=100.0)
    history.record("job", {"pod": (11.0, 2 << 20)}, now=102.0)  # 1 s of CPU in 2 s: 50 %
    history.record("job", {"pod": (13.0, 2 << 20)}, now=103.0)
    series = history.series("job")["metrics"]
    assert series["cpu %"]["pod"]["y"] == [50.0, 200.0]  # bounded: the first rate is dropped
    assert series["memory MiB"]["pod"]["y"] == [2.0, 2.0]
    history.keep_only([])
    assert history.series("job") == {"count": 0, "metrics": {}}


@pytest.mark.e2e
def test_the_job_page_charts_each_pods_cpu_and_memory(
    tmp_path: Path, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    client.submit(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "busy"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 1, "command": ["python", "-c", BUSY]},
            },
        }
    )
    server = start_ui(client)
    base = server.url.rstrip("/")
    try:
        client.wait_for_job_status("busy", {"Running"}, timeout=START_SECONDS)
        browser.get(f"{base}/#/jobs/busy")
        chart = (By.CSS_SELECTOR, '#resource-charts .chart[data-metric="memory MiB"]')

        def charted(driver: Any) -> bool:
            found = driver.find_elements(*chart)
            return bool(found) and int(found[0].get_attribute("data-points") or 0) >= 3

        WebDriverWait(browser, SEE_SECONDS).until(charted)
        assert browser.find_elements(
            By.CSS_SELECTOR, '#resource-charts .chart[data-metric="cpu %"]'
        )
        with urllib.request.urlopen(f"{base}/api/jobs/busy/resources", timeout=30) as answer:
            series = json.loads(answer.read())["metrics"]
        pod = "busy-node-0-0"
        assert max(series["memory MiB"][pod]["y"]) >= HELD_MIB  # the child's memory counts
        assert max(series["cpu %"][pod]["y"]) > 20  # the busy loop
    finally:
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's: stops it
