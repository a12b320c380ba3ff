"""``GET /api/jobs`` with many local jobs, before and after the job index, in one run.

Runs one real local job, copies its folder ``--jobs`` times (each copy renamed, so the list holds
that many finished jobs as they lie on disk), and times requests over loopback against three
servers: "before" answers as the UI did before the index (``list_jobs`` and a manifest read per
job, every row in every answer); "rebuilt" keeps the index of rows but, as the UI did until the
kept selections, builds, filters and sorts every row per request; "after" is today's
``UiServer``. Prints the median of ``--repeat`` requests per case and the answer's
size.

    python packages/trainer-sdk/benchmarks/bench_job_list.py [--jobs 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.status.jobs import finished_at
from trainer_sdk.ui import Access, UiServer, views

Rows = list[tuple[str, str, str]]

JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "seed"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 1, "command": ["python", "-c", "print('done')"]},
    },
}


class BeforeServer(UiServer):
    """The job list as it was answered before the index: everything re-read, every row sent."""

    def jobs(self, query: Mapping[str, str]) -> tuple[list[Mapping[str, Any]], int]:
        now = self.clock()
        rows: list[Mapping[str, Any]] = []
        for job in self.client.list_jobs():
            try:
                manifest = self.client.backend.get_job_manifest(job.name)
            except JobNotFoundError:
                continue
            rows.append(views.job_summary(job, finished_at(manifest), now))
        return rows, len(rows)


class RebuiltServer(UiServer):
    """The index of rows, every row built, filtered and sorted again per request."""

    def jobs(self, query: Mapping[str, str]) -> tuple[list[Mapping[str, Any]], int]:
        now = self.clock()
        rows = views.select_rows(
            [views.job_row(item, now) for item in self.job_list.refresh()],
            query.get("q", ""),
            sort=query.get("sort", "created"),
            descending=query.get("order", "desc") != "asc",
        )
        limit = int(query.get("limit", len(rows)))
        return rows[:limit], len(rows)


def page_cases(kind: type[UiServer], label: str, client: TrainerClient, repeat: int) -> Rows:
    """The first request, a page of 50, a search and a 304 against a fresh ``kind``."""
    rows: Rows = []
    with serving(kind, client) as base:
        cold = timed(f"{base}/api/jobs?limit=50")
        rows.append((f"{label}: first request (builds index)", f"{1000 * cold[0]:.1f} ms", ""))
        page = f"{base}/api/jobs?limit=50"
        rows.append((f"{label}: a page of 50", *median_ms(page, repeat)))
        sort = f"{base}/api/jobs?sort=name&order=asc&limit=50"
        rows.append((f"{label}: sorted by name, a page", *median_ms(sort, repeat)))
        search = f"{base}/api/jobs?q=job-0999&limit=50"
        rows.append((f"{label}: search, a page of 50", *median_ms(search, repeat)))
        tag = timed(page)[2]
        revalidate = median_ms(page, repeat, {"If-None-Match": tag})
        rows.append((f"{label}: 304 revalidation", *revalidate))
    return rows


def clone_jobs(root: Path, count: int) -> None:
    """``count`` copies of the finished job ``seed``'s folder, each under its own name."""
    seed = root / "seed"
    for index in range(count):
        name = f"job-{index:05d}"
        shutil.copytree(seed, root / name, symlinks=True, ignore=shutil.ignore_patterns(".*"))
        manifest = json.loads((root / name / "trainjob.json").read_text())
        manifest["metadata"]["name"] = name
        (root / name / "trainjob.json").write_text(json.dumps(manifest))


@contextmanager
def serving(kind: type[UiServer], client: TrainerClient) -> Iterator[str]:
    server = kind(client, Access("127.0.0.1", None), 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.url.rstrip("/")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def timed(url: str, headers: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Seconds, body bytes and the ETag of one request."""
    started = time.perf_counter()
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            body, tag = response.read(), response.headers.get("ETag", "")
    except urllib.error.HTTPError as error:  # 304
        body, tag = error.read(), error.headers.get("ETag", "")
    return time.perf_counter() - started, len(body), tag


def median_ms(url: str, repeat: int, headers: dict[str, str] | None = None) -> tuple[str, str]:
    runs = [timed(url, headers) for _ in range(repeat)]
    size = runs[-1][1]
    return f"{1000 * statistics.median(run[0] for run in runs):.1f} ms", f"{size:,} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "jobs"
        client = TrainerClient(LocalBackendConfig(root=root))
        client.submit(JOB)
        client.wait_for_job_status("seed", timeout=600)
        clone_jobs(root, arguments.jobs)
        rows: Rows = []
        with serving(BeforeServer, client) as base:
            rows.append(("before: /api/jobs (all rows)", *median_ms(f"{base}/api/jobs", 1)))
        rows += page_cases(RebuiltServer, "rebuilt", client, arguments.repeat)
        rows += page_cases(UiServer, "after", client, arguments.repeat)
    print(f"{arguments.jobs + 1:,} finished local jobs, median of {arguments.repeat} requests")
    print(f"{'case':<44}{'time':>14}{'answer':>14}")
    for case, seconds, size in rows:
        print(f"{case:<44}{seconds:>14}{size:>14}")


if __name__ == "__main__":
    main()
