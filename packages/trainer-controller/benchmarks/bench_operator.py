"""Create N TrainJobs against the API stand-in; time until every JobSet exists; API calls per job.

    python packages/trainer-controller/benchmarks/bench_operator.py --jobs 1000 --workers 1 8
    python packages/trainer-controller/benchmarks/bench_operator.py --jobs 300 --workers 8 \
        --cache on --baseline main

One operator process (``trainer-controller run``, no webhooks) per row, each against a fresh
stand-in served from this process: every ``--workers`` value with the informer cache, then the
first one without it (``--cache on off`` picks). ``--baseline REF`` also runs each row with the
workspace's code as it is at the git revision REF (every ``packages/*/src`` taken with ``git
archive`` and put first on the path; third-party packages are the environment's, so a baseline
from before the operator dropped kopf needs ``pip install kopf``), each baseline row just before
its own, so that before and after come from one run on one machine. The first row is the
reference for the speed-up. The target for writes is "owned objects + 1 status write" per
TrainJob; reads are the reconciles' GETs.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kube_standin import TRAINER_TYPES, ApiServer
from trainer_runtime import builtin_runtimes

CONFIG = """\
concurrency: {workers}
informerCache: {cache}
apiQPS: 0
healthPort: 0
metricsPort: 0
progressPort: 0
bindAddress: 127.0.0.1
logLevel: WARNING
"""
OWNED = (
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
)
OWNED_PLURALS = tuple(plural for _, _, plural in OWNED)


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not reached within {timeout}s")
        time.sleep(0.05)


def extract_sources(revision: str, directory: Path) -> str:
    """A PYTHONPATH of every package's source as it is at git ``revision``, under ``directory``."""
    root = Path(__file__).resolve().parents[3]
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", revision, "packages"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return os.pathsep.join(map(str, sorted(directory.glob("packages/*/src"))))


def run_once(
    jobs: int, workers: int, runtime: str, cache: bool, source: str | None = None
) -> dict[str, Any]:
    with ApiServer() as server, tempfile.TemporaryDirectory() as directory:
        for rtype in TRAINER_TYPES:
            server.call(server.store.register, rtype)
        server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "kubeflow-system"}})
        manifest = builtin_runtimes()[runtime].to_dict()
        server.request(
            "POST", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", manifest
        )
        config = Path(directory) / "config.yaml"
        config.write_text(CONFIG.format(workers=workers, cache=str(cache).lower()))
        kubeconfig = server.write_kubeconfig(Path(directory) / "kubeconfig")
        # The operator is its own process, as in a cluster: it does not share a GIL with the server.
        operator = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from trainer_controller.cli import main; main()",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--no-webhooks",
                "--config",
                str(config),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": source} if source else None,
        )
        lease = "/apis/coordination.k8s.io/v1/namespaces/kubeflow-system/leases/trainer-controller"
        _wait(
            lambda: server.request("GET", lease)[0] == 200 or operator.poll() is not None,
            120,
            "leading",
        )
        baseline = Counter(server.call(lambda: dict(server.store.writes)))
        reads_before = sum(server.reads.values())
        started = time.perf_counter()
        for index in range(jobs):
            status, body = server.request(
                "POST",
                "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs",
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": f"job-{index:05d}"},
                    "spec": {"runtimeRef": {"name": runtime}},
                },
            )
            assert status == 201, body
        created = time.perf_counter() - started
        store = server.store
        jobsets = store.type_of("jobset.x-k8s.io", "v1alpha2", "jobsets")
        _wait(lambda: server.call(store.count, jobsets) == jobs, 1800, "every JobSet")
        elapsed = time.perf_counter() - started
        _wait(
            lambda: (
                server.call(lambda: store.writes[("patch", "trainjobs", "status")])
                - baseline[("patch", "trainjobs", "status")]
                >= jobs
            ),
            600,
            "every status",
        )
        writes = Counter(server.call(lambda: dict(store.writes)))
        reads = sum(server.reads.values()) - reads_before
        writes.subtract(baseline)
        operator.send_signal(signal.SIGTERM)
        operator.wait(timeout=60)
        owned = sum(server.call(store.count, store.type_of(*rtype)) for rtype in OWNED)
        job_writes = sum(
            value
            for (verb, plural, _), value in writes.items()
            if plural in OWNED_PLURALS or (plural == "trainjobs" and verb != "create")
        )
        return {
            "code": "baseline" if source else "this",
            "workers": workers,
            "cache": "on" if cache else "off",
            "reads_per_job": reads / jobs,
            "create_s": created,
            "all_jobsets_s": elapsed,
            "jobsets_per_s": jobs / elapsed,
            "writes_per_job": job_writes / jobs,
            "owned_per_job": owned / jobs,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--runtime", default="torch-distributed")
    parser.add_argument("--cache", nargs="+", choices=["on", "off"], default=["on", "off"])
    parser.add_argument("--baseline", metavar="REF", help="also run the operator of git REF")
    arguments = parser.parse_args()
    settings = [(workers, True) for workers in arguments.workers] if "on" in arguments.cache else []
    if "off" in arguments.cache:
        settings.append((arguments.workers[0], False))
    with tempfile.TemporaryDirectory() as directory:
        sources = (
            [extract_sources(arguments.baseline, Path(directory))] if arguments.baseline else []
        )
        rows = [  # each baseline row just before its own, so both see the same machine load
            run_once(arguments.jobs, workers, arguments.runtime, cache, source)
            for workers, cache in settings
            for source in (*sources, None)
        ]
    base = rows[0]["all_jobsets_s"]
    print(
        f"{arguments.jobs} TrainJobs, runtime {arguments.runtime}, one replica on the API stand-in"
        + (f"; baseline: the operator at {arguments.baseline}" if arguments.baseline else "")
    )
    print(
        f"{'code':>8} | {'workers':>7} | {'cache':>5} | {'create s':>8} | {'all JobSets s':>13} | "
        f"{'JobSets/s':>9} | {'speed-up':>8} | {'reads/job':>9} | {'writes/job':>10} | "
        f"{'target (owned+1)':>16}"
    )
    for row in rows:
        print(
            f"{row['code']:>8} | {row['workers']:>7} | {row['cache']:>5} | "
            f"{row['create_s']:>8.1f} | {row['all_jobsets_s']:>13.1f} | "
            f"{row['jobsets_per_s']:>9.1f} | "
            f"{base / row['all_jobsets_s']:>7.2f}x | {row['reads_per_job']:>9.2f} | "
            f"{row['writes_per_job']:>10.2f} | {row['owned_per_job'] + 1:>16.2f}"
        )


if __name__ == "__main__":
    main()
