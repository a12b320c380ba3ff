"""The UI server of this tree against the one of ``--against`` (a git revision), in one run.

Each side is ``trainer ui`` started as a process whose ``trainer_sdk`` comes from that side's
``packages/trainer-sdk/src`` (the revision's is exported with ``git archive``), over the same
local jobs: ``--jobs`` finished ones (one real job, its folder copied) and one that printed
100,000 lines. Per side it prints the median of ``--starts`` starts (from spawning ``trainer ui``
until ``/api/info`` answers), the median of ``--repeat`` requests for the job list's first page
(what the page asks: ``limit=50``) and for the whole list, the time to download the long log,
and in headless Chromium the seconds from opening the long job's page until its log panel
reports the log's end (``bench_log_panel``'s probe).

    python packages/trainer-sdk/benchmarks/bench_ui_server.py [--against 40d1904] [--jobs 10000]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import bench_log_panel
from bench_job_list import clone_jobs
from revisions import export
from trainer_sdk import LocalBackendConfig, TrainerClient

PACKAGE = Path(__file__).resolve().parents[1]
LONG_LOG = 100_000
START_SECONDS = 120
TRAINER_UI = "from trainer_sdk.cli import main; main()"


@contextmanager
def trainer_ui(source: Path, root: Path) -> Iterator[tuple[str, float]]:
    """``trainer ui`` on a free port with ``trainer_sdk`` from ``source``: its base URL and the
    seconds from spawning it until ``/api/info`` answered; Ctrl-C (SIGINT) at the end."""
    environment = {**os.environ, "PYTHONPATH": str(source), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-c", TRAINER_UI, "--backend", "local", "--root", str(root)]
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "ui", "--port", "0"], env=environment, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # `trainer ui: open URL`, on stderr
        threading.Thread(target=process.stderr.read, daemon=True).start()  # never a full pipe
        if "open " not in line:
            raise RuntimeError(f"trainer ui from {source} did not start: {line!r}")
        base = line.split("open ", 1)[1].strip().rstrip("/")
        deadline = started + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/info", timeout=10) as response:
                    response.read()
                break
            except OSError:
                if time.perf_counter() > deadline:
                    raise
        yield base, time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def seconds(url: str) -> float:
    """Seconds to read the whole answer to ``url``."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        while response.read(1 << 20):
            pass
    return time.perf_counter() - started


def median(measure: Callable[[], float], repeat: int) -> float:
    return statistics.median(measure() for _ in range(repeat))


def measure_side(
    source: Path, root: Path, arguments: argparse.Namespace, profile: Path
) -> dict[str, str]:
    starts = []
    for _ in range(arguments.starts):
        with trainer_ui(source, root) as (_, started):
            starts.append(started)
    row = {"trainer ui start (to /api/info)": f"{1000 * statistics.median(starts):.0f} ms"}
    setup = bench_log_panel._load_browser_setup()
    with trainer_ui(source, root) as (base, _):
        first = seconds(f"{base}/api/jobs?limit=50")
        row["/api/jobs first request (index)"] = f"{1000 * first:.0f} ms"
        page = median(lambda: seconds(f"{base}/api/jobs?limit=50"), arguments.repeat)
        row["/api/jobs?limit=50"] = f"{1000 * page:.1f} ms"
        whole = median(lambda: seconds(f"{base}/api/jobs"), arguments.repeat)
        row["/api/jobs (every row)"] = f"{1000 * whole:.0f} ms"
        log = f"{base}/api/jobs/long/logs?step=node-0&download=1"
        row[f"download {LONG_LOG:,}-line log"] = f"{1000 * median(lambda: seconds(log), 3):.0f} ms"
        with bench_log_panel.chromium(setup, profile) as driver:
            opened, _ = bench_log_panel.time_until_ended(
                driver, f"{base}/#/jobs/long", arguments.limit, probe=False
            )
        shown = f"{opened:.2f} s" if opened is not None else f"> {arguments.limit:.0f} s"
        row[f"log panel opens {LONG_LOG:,} lines"] = shown
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="40d1904", help="git revision of the old server")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds for the panel at most")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch_path = Path(scratch)
        root = scratch_path / "jobs"
        client = TrainerClient(LocalBackendConfig(root=root))
        client.submit(bench_log_panel.printing_job("seed", 1))
        client.submit(bench_log_panel.printing_job("long", LONG_LOG))
        for name in ("seed", "long"):
            client.wait_for_job_status(name, timeout=600)
        client.backend.close()  # type: ignore[attr-defined]  # the local backend's
        clone_jobs(root, arguments.jobs)
        sides = {
            arguments.against: export(arguments.against, scratch_path / "against"),
            "this tree": PACKAGE / "src",
        }
        rows = {
            side: measure_side(source, root, arguments, scratch_path / f"profile-{index}")
            for index, (side, source) in enumerate(sides.items())
        }
    print(f"{arguments.jobs + 2:,} local jobs; medians of {arguments.repeat} requests")
    print(f"{'case':<36}" + "".join(f"{side:>14}" for side in rows))
    for case in rows["this tree"]:
        print(f"{case:<36}" + "".join(f"{row[case]:>14}" for row in rows.values()))


if __name__ == "__main__":
    main()
