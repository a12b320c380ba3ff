"""The browser tests never reach past loopback (issue 25, item 9): Chromium's other traffic ends
in the conftest's sink, and as root every module of this suite runs in a network namespace of
its own, loopback only, with the servers, chromedriver and Chromium inside it."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.ui import UiServer

pytestmark = pytest.mark.e2e

SEE_SECONDS = 60
TEST_NET = ("192.0.2.1", 80)  # RFC 5737: never routed anywhere


def load_job_list(browser: Any, server: UiServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server.url)
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element((By.ID, "jobs"), "No TrainJobs")
    )


def network_namespace(pid: int | str = "thread-self") -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parent = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def test_another_host_reaches_only_the_sink(
    tmp_path: Path, browser: Any, outside_sink: Any, start_ui: Callable[..., UiServer]
) -> None:
    load_job_list(browser, start_ui(TrainerClient(LocalBackendConfig(root=tmp_path))))
    browser.get("http://outside.example/")
    assert any("outside.example" in line for line in outside_sink.requests), outside_sink.requests
    outside_sink.requests.clear()  # expected here; the fixture fails any other test that tries


def test_the_suite_runs_in_a_namespace_with_loopback_only_and_no_route_out(
    loopback_only_network: str | None,
    tmp_path: Path,
    browser: Any,
    start_ui: Callable[..., UiServer],
) -> None:
    if loopback_only_network is not None:
        pytest.skip(loopback_only_network)
    ours = network_namespace()
    assert ours != network_namespace(os.getppid()), "still in the network namespace pytest began in"
    assert [name for _, name in socket.if_nameindex()] == ["lo"]
    with pytest.raises(OSError):  # ENETUNREACH: there is no route out of this namespace
        socket.create_connection(TEST_NET, timeout=5).close()
    driver = browser.service.process.pid
    namespaces = {}
    for pid in [driver, *descendants(driver)]:
        with contextlib.suppress(FileNotFoundError):  # a helper process that has ended since
            namespaces[pid] = network_namespace(pid)
    assert len(namespaces) > 1, "chromedriver started no browser"
    assert set(namespaces.values()) == {ours}, namespaces
    server = start_ui(TrainerClient(LocalBackendConfig(root=tmp_path)))
    load_job_list(browser, server)
