"""The README's screenshots of ``trainer ui``, taken in headless Chromium from real local jobs.

Runs a sweep of five learning rates (each logging loss and lr) and a two-node job whose rank 1
raises, then saves ``job-list.png``, ``compare.png`` (the five runs) and ``failed-job.png`` next
to this file. Nothing leaves loopback (the browser tests' offline Chromium setup).

    python packages/trainer-sdk/docs/screenshots.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import tempfile
from pathlib import Path

from trainer_sdk import CustomTrainer, Labels, LocalBackendConfig, TrainerClient
from trainer_sdk.errors import JobFailedError

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent / "benchmarks"
LEARNING_RATES = (0.3, 0.1, 0.03, 0.01, 0.003)
SEE_SECONDS = 120


def sweep_run(lr: float, batch_size: int) -> None:
    """A toy loss curve that depends on ``lr``: logged every step, with the learning rate."""
    import math
    import random

    from trainer_sdk import log_metrics

    rng = random.Random(int(lr * 1000))
    for step in range(60):
        loss = 2.0 * math.exp(-lr * 4 * step) + 0.05 * rng.random() + 0.1 * (lr > 0.2)
        log_metrics({"loss": loss, "lr": lr * 0.98**step}, step=step)


def crash_on_rank_one() -> None:
    """Rank 1 fails at its fourth step; rank 0 is ended with it."""
    import os
    import time

    from trainer_sdk import log_metrics

    rank = int(os.environ["RANK"])
    for step in range(4):
        log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        if rank == 1 and step == 3:
            batch = {"tokens": []}
            raise ValueError(f"empty batch at step {step}: {batch}")
    time.sleep(120)


def main() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(
        "bench_log_panel", BENCHMARKS / "bench_log_panel.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    setup = bench._load_browser_setup()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        client = TrainerClient(LocalBackendConfig(root=root / "jobs"))
        names = [
            client.train(
                trainer=CustomTrainer(func=sweep_run, func_args={"lr": lr, "batch_size": 64}),
                options=[Labels({"sweep": "lr-2026-12", "model": "mlp"})],
            )
            for lr in LEARNING_RATES
        ]
        failed = client.train(trainer=CustomTrainer(func=crash_on_rank_one, num_nodes=2))
        for name in names:
            client.wait_for_job_status(name, timeout=600)
        with contextlib.suppress(JobFailedError):  # expected: the screenshot's failed job
            client.wait_for_job_status(failed, timeout=600)
        with bench.serving(client, bench.ui_server.STATIC_DIR) as server:
            base = server.url.rstrip("/")
            with bench.chromium(setup, root / "profile") as driver:
                driver.set_window_size(1400, 900)
                driver.get(f"{base}/#/")
                WebDriverWait(driver, SEE_SECONDS).until(
                    seen.presence_of_element_located((By.CSS_SELECTOR, "td.metric"))
                )
                driver.save_screenshot(str(HERE / "job-list.png"))
                driver.set_window_size(1400, 1000)
                driver.get(f"{base}/#/compare/{','.join(names)}")
                WebDriverWait(driver, SEE_SECONDS).until(
                    seen.presence_of_element_located((By.CSS_SELECTOR, "#summaries tbody tr"))
                )
                driver.find_element(By.ID, "chart-log").click()
                driver.save_screenshot(str(HERE / "compare.png"))
                driver.set_window_size(1400, 1100)
                driver.get(f"{base}/#/jobs/{failed}")
                WebDriverWait(driver, SEE_SECONDS).until(
                    seen.presence_of_element_located((By.ID, "failure-traceback"))
                )
                WebDriverWait(driver, SEE_SECONDS).until(
                    seen.text_to_be_present_in_element((By.ID, "log-count"), "(ended)")
                )
                driver.save_screenshot(str(HERE / "failed-job.png"))
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's
    print("\n".join(str(HERE / name) for name in ("job-list.png", "compare.png", "failed-job.png")))


if __name__ == "__main__":
    main()
