"""How fast the UI's log panel shows a log, before and after, in headless Chromium.

Runs local jobs that print 1,000 / 10,000 / 100,000 lines (finished: "open") and one that prints
1,000 lines a second for ``--live-seconds`` (running: "follow"), serves the UI twice in one run,
once with the ``app.js`` and ``app.css`` of ``--baseline`` (a git revision) and once with this
tree's, and prints per case the seconds from opening the job page until the panel reports the
log's end, and, for the live job, the longest gap between animation frames, how many frames were
drawn and how many took over 33 ms (at least one frame of a 60 Hz display dropped) and over
50 ms.

    python packages/trainer-sdk/benchmarks/bench_log_panel.py [--baseline ef5bc6c] [--limit 120]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.ui import Access, UiServer
from trainer_sdk.ui import server as ui_server

PACKAGE = Path(__file__).resolve().parents[1]
STATIC = "packages/trainer-sdk/src/trainer_sdk/ui/static"
PAGE_FILES = ("app.js", "app.css")
"""What the baseline's page is made of (its script and its styles, which go together)."""
SIZES = (1_000, 10_000, 100_000)
COMMAND_SECONDS = 15
ENDED_PROBE = """
setInterval(() => {
  const count = document.getElementById("log-count");
  if (!window.__ended && count && count.textContent.includes("(ended)")) {
    window.__ended = performance.now();
  }
}, 20);
"""
FRAME_PROBE = """
window.__frames = [];
let last = performance.now();
const tick = (now) => {
  window.__frames.push(now - last); last = now; requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"""


def _load_browser_setup() -> Any:
    """The tests' offline Chromium setup (flags, sink), shared rather than copied."""
    spec = importlib.util.spec_from_file_location("ui_conftest", PACKAGE / "tests/ui/conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def printing_job(name: str, lines: int, per_second: int | None = None) -> dict[str, Any]:
    pace = f"\n    if i % 100 == 99: time.sleep({100 / per_second})" if per_second else ""
    code = f"import sys, time\nfor i in range({lines}):\n    print(f'{name} line {{i}}'){pace}"
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 1, "command": ["python", "-u", "-c", code]},
        },
    }


@contextmanager
def serving(client: TrainerClient, static: Path) -> Iterator[UiServer]:
    """The UI with its static files from ``static``."""
    ui_server.STATIC_DIR = static  # type: ignore[misc]  # the one switch between the variants
    server = UiServer(client, Access("127.0.0.1", None), 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def end_children(parent: int) -> None:
    """SIGKILL the processes whose parent is ``parent`` (the browser chromedriver started)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == parent:
            os.kill(int(stat.parent.name), signal.SIGKILL)


@contextmanager
def chromium(setup: Any, profile: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from urllib3.exceptions import ReadTimeoutError

    sink = setup.OutsideSink()
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = str(setup.DEBIAN_CHROMIUM)
    options.add_experimental_option("prefs", setup.CHROMIUM_PREFS)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,2000",
        f"--user-data-dir={profile}",
        f"--proxy-server=http://{sink.address}",
        *setup.CHROMIUM_OFFLINE_FLAGS,
    ):
        options.add_argument(argument)
    service = webdriver.ChromeService(shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.command_executor._client_config.timeout = COMMAND_SECONDS  # a frozen tab: move on
    try:
        yield driver
    finally:
        try:
            driver.quit()
        except (WebDriverException, ReadTimeoutError):  # frozen: end the browser and driver
            end_children(driver.service.process.pid)
            driver.service.process.kill()
        sink.shutdown()
        sink.server_close()


def time_until_ended(driver: Any, url: str, limit: float, probe: bool) -> tuple[float | None, Any]:
    """Seconds from navigation until ``#log-count`` says ``(ended)``, as the page's own clock
    saw it (None: not within ``limit``), and the frame gaps when ``probe``."""
    from selenium.common.exceptions import WebDriverException
    from urllib3.exceptions import ReadTimeoutError

    source = ENDED_PROBE + (FRAME_PROBE if probe else "")
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})
    deadline = time.monotonic() + limit
    driver.get(url)
    while time.monotonic() < deadline:
        try:
            ended = driver.execute_script("return window.__ended || null;")
        except (WebDriverException, ReadTimeoutError):  # a frozen tab answers nothing: wait on
            ended = None
        if ended is not None:
            frames = driver.execute_script("return window.__frames || [];") if probe else []
            return ended / 1000, frames
        time.sleep(0.25)
    return None, []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="ef5bc6c", help="git revision of the old app.js")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per case at most")
    parser.add_argument("--live-seconds", type=int, default=10)
    arguments = parser.parse_args()
    setup = _load_browser_setup()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        baseline = root / "baseline-static"
        shutil.copytree(ui_server.STATIC_DIR, baseline)
        for page_file in PAGE_FILES:
            old = subprocess.run(
                ["git", "show", f"{arguments.baseline}:{STATIC}/{page_file}"],
                check=True,
                capture_output=True,
                text=True,
                cwd=PACKAGE,
            ).stdout
            (baseline / page_file).write_text(old)
        variants = {"before": baseline, "after": ui_server.STATIC_DIR}
        client = TrainerClient(LocalBackendConfig(root=root / "jobs"))
        for size in SIZES:
            client.submit(printing_job(f"log-{size}", size))
            client.wait_for_job_status(f"log-{size}", timeout=600)
        print(f"{'case':<28}{'before':>14}{'after':>14}")
        results: dict[str, dict[str, str]] = {}
        for variant, static in variants.items():
            with serving(client, static) as server:
                base = server.url.rstrip("/")
                frozen = False
                for size in SIZES:
                    case = results.setdefault(f"open {size:,} lines", {})
                    if frozen:  # a smaller log already took longer than the limit
                        case[variant] = f"> {arguments.limit:.0f} s"
                        continue
                    with chromium(setup, root / f"{variant}-{size}") as driver:
                        seconds, _ = time_until_ended(
                            driver, f"{base}/#/jobs/log-{size}", arguments.limit, probe=False
                        )
                    frozen = seconds is None
                    case[variant] = f"{seconds:.2f} s" if seconds else f"> {arguments.limit:.0f} s"
                live = f"live-{variant}"
                client.submit(printing_job(live, 1000 * arguments.live_seconds, per_second=1000))
                with chromium(setup, root / live) as driver:
                    seconds, frames = time_until_ended(
                        driver, f"{base}/#/jobs/{live}", arguments.limit + 60, probe=True
                    )
                key = f"follow 1,000 lines/s x {arguments.live_seconds}s"
                results.setdefault(key, {})[variant] = (
                    f"{max(frames):.0f} ms max" if frames else "no end seen"
                )
                for label, over in (
                    ("frames", 0),
                    ("  over 33 ms (dropped)", 33),
                    ("  over 50 ms", 50),
                ):
                    results.setdefault(label, {})[variant] = (
                        str(sum(1 for gap in frames if gap > over)) if frames else "-"
                    )
                client.wait_for_job_status(live, timeout=600)
        for case, row in results.items():
            print(f"{case:<28}{row.get('before', ''):>14}{row.get('after', ''):>14}")
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's


if __name__ == "__main__":
    main()
