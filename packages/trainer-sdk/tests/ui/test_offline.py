"""The browser tests never reach past loopback (issue 25, item 9): Chromium's other traffic ends
in the conftest's sink, and as root a page load passes inside a network namespace that has
loopback only."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.ui import UiServer

pytestmark = pytest.mark.e2e

NAMESPACE_ENV = "TRAINER_UI_TEST_NETNS"
SEE_SECONDS = 60
NAMESPACE_RUN_SECONDS = 300
TEST_NET = ("192.0.2.1", 80)  # RFC 5737: never routed anywhere


def load_job_list(browser: Any, server: UiServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server.url)
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element((By.ID, "jobs"), "No TrainJobs")
    )


def test_another_host_reaches_only_the_sink(
    tmp_path: Path, browser: Any, outside_sink: Any, start_ui: Callable[..., UiServer]
) -> None:
    load_job_list(browser, start_ui(TrainerClient(LocalBackendConfig(root=tmp_path))))
    browser.get("http://outside.example/")
    assert any("outside.example" in line for line in outside_sink.requests), outside_sink.requests
    outside_sink.requests.clear()  # expected here; the fixture fails any other test that tries


@pytest.mark.skipif(
    os.geteuid() != 0
    or not shutil.which("unshare")
    or not shutil.which("ip")
    or os.environ.get(NAMESPACE_ENV) == "1",
    reason="a private network namespace needs root, unshare(1) and ip(8)",
)
def test_the_browser_runs_in_a_namespace_with_no_route_out(request: pytest.FixtureRequest) -> None:
    script = 'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider "$1" -k "$2"'
    result = subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", script, sys.executable, __file__, "namespace_has"],
        cwd=request.config.rootpath,
        env={**os.environ, NAMESPACE_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=NAMESPACE_RUN_SECONDS,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "1 passed" in result.stdout


@pytest.mark.skipif(
    os.environ.get(NAMESPACE_ENV) != "1",
    reason="runs inside the namespace test_the_browser_runs_in_a_namespace_with_no_route_out makes",
)
def test_namespace_has_loopback_only_and_the_ui_loads(
    tmp_path: Path, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    with pytest.raises(OSError):  # ENETUNREACH: there is no route out of this namespace
        socket.create_connection(TEST_NET, timeout=5).close()
    load_job_list(browser, start_ui(TrainerClient(LocalBackendConfig(root=tmp_path))))
