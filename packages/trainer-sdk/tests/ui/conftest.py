"""The UI server on port 0 in a thread, and a headless Chromium from the Debian packages."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import TrainerClient
from trainer_sdk.ui import Access, UiServer

PAGE_LOAD_SECONDS = 60


@pytest.fixture
def start_ui() -> Iterator[Callable[..., UiServer]]:
    """``start_ui(client, token=None, allow_delete=True, **options)``: a running server (options:
    UiServer's keywords); stopped at the end."""
    running: list[tuple[UiServer, threading.Thread]] = []

    def start(
        client: TrainerClient,
        token: str | None = None,
        allow_delete: bool = True,
        **options: Any,
    ) -> UiServer:
        server = UiServer(
            client, Access("127.0.0.1", token), 0, allow_delete=allow_delete, **options
        )
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless Chromium driven by the Debian chromedriver (nothing downloaded)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium")
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("needs Debian's chromium and chromium-driver (tools/bootstrap installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,2000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
    try:
        yield driver
    finally:
        driver.quit()
