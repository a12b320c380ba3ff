"""The UI's pages in Chromium under hostile data: markup in function arguments, annotations, metric
names, log lines and the exception a rank raised is shown as text on the job list, the job page
(summary, failure, log panel, charts, conditions, YAML) and the compare page, never made into
elements, and the pages keep working around a 200 KB line, control characters and bidi overrides."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import Annotations, CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.errors import JobFailedError
from trainer_sdk.ui import UiServer

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 300
SEE_SECONDS = 60
# Each would become an element (and, without the page's CSP, run) if inserted as HTML.
MARKUP = '<img src="x" onerror="document.title=\'owned\'"><script>document.title="owned"</script>'
INJECTED = "img[src='x'], [onerror], script:not([src]), iframe, object, embed"


def hostile(markup: str) -> None:
    """Logs a metric named by ``markup``, prints it among awkward lines, then raises it."""
    from trainer_sdk import log_metrics

    for step in range(3):
        log_metrics({markup: float(step), "loss": 1.0 / (step + 1)}, step=step)
    print(markup, flush=True)
    print("\x1b[31mred\x1b[0m \x00 nul \u202etxet desrever\u202c \x07 bell", flush=True)
    print("long " + "x" * 200_000, flush=True)
    print("after the long line", flush=True)
    raise ValueError(markup)


def injected(browser: Any) -> list[str]:
    """Elements markup would have made, as HTML snippets (none expected)."""
    found: list[str] = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.outerHTML.slice(0, 120))",
        INJECTED,
    )
    return found


def test_hostile_strings_are_shown_as_text_on_every_page(
    tmp_path: Path, browser: Any, start_ui: Callable[..., UiServer]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    try:
        name = client.train(
            trainer=CustomTrainer(func=hostile, func_args={"markup": MARKUP}),
            options=[Annotations({"example.com/note": MARKUP})],
        )
        with pytest.raises(JobFailedError):
            client.wait_for_job_status(name, timeout=WAIT_SECONDS)
        server = start_ui(client)
        base = server.url.rstrip("/")
        wait = WebDriverWait(browser, SEE_SECONDS)

        browser.get(f"{base}/#/")  # the job list: the func_args column and the metric columns
        wait.until(seen.text_to_be_present_in_element((By.ID, "main"), "onerror="))
        assert injected(browser) == []

        browser.get(f"{base}/#/jobs/{name}")
        wait.until(seen.text_to_be_present_in_element((By.ID, "failure-exception"), "<script>"))
        wait.until(seen.text_to_be_present_in_element((By.ID, "main"), "after the long line"))
        text = browser.find_element(By.ID, "main").text
        assert f"ValueError: {MARKUP}" in browser.find_element(By.ID, "failure-exception").text
        assert MARKUP in text  # the log line, as printed
        assert injected(browser) == []
        assert browser.title.startswith(name) and "owned" not in browser.title

        browser.get(f"{base}/#/compare/{name}")
        wait.until(seen.text_to_be_present_in_element((By.ID, "main"), "Compare 1 runs"))
        assert injected(browser) == []
        assert browser.find_element(By.ID, "error").text == ""
    finally:
        client.backend.close()  # type: ignore[attr-defined]
