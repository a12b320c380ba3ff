"""Run the tests that start processes K times in a row under CPU load; print flakes per test.

    python tools/flake_hunt.py [--runs 3] [--load N] [-m e2e] [PATH ...] [-- PYTEST ARGS]

Each run is one pytest session over PATHs (default: the configured testpaths) selecting the
marker expression (default ``e2e``: the tests that start processes or servers), while N busy
processes (default: one per core) keep every core loaded, as other work does on a shared 2-core
machine. The table lists every test that did not pass every time, with its failures/K; the exit
status is 1 when there was any, so a run that prints nothing and exits 0 is a flake-free suite.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["cpu_load", "main", "outcomes"]

REPO_ROOT = Path(__file__).resolve().parents[1]


def outcomes(junit_xml: Path) -> dict[str, bool]:
    """Each test case of a JUnit report (``file::name``) and whether it passed (skips pass)."""
    results = {}
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        results[test] = case.find("failure") is None and case.find("error") is None
    return results


def _spin() -> None:
    while True:
        pass


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """``processes`` busy loops for the duration of the block."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


def run_once(paths: Sequence[str], marker: str, extra: Sequence[str], report: Path) -> int:
    """One pytest session; its exit status (its results are in ``report``)."""
    command = [sys.executable, "-m", "pytest", *paths, "-m", marker, "-q", "-p", "no:cacheprovider"]
    command += [f"--junitxml={report}", *extra]
    return subprocess.run(command, cwd=REPO_ROOT, check=False).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; 1 when some test failed in some run."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", "-k", type=int, default=3, help="K: sessions in a row")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes")
    parser.add_argument("-m", dest="marker", default="e2e", help="pytest marker expression")
    parser.add_argument("paths", nargs="*", help="test files or directories (default: all)")
    options = parser.parse_args(args)
    if options.runs < 1:
        parser.error(f"--runs: expected at least 1, got {options.runs}")
    failures: Counter[str] = Counter()
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch, cpu_load(options.load):
        for run in range(options.runs):
            started = time.monotonic()
            report = Path(scratch) / f"run-{run}.xml"
            status = run_once(options.paths, options.marker, extra, report)
            if not report.is_file():
                print(f"run {run + 1}: pytest exited {status} without a report", file=sys.stderr)
                return 2
            results = outcomes(report)
            seen |= results.keys()
            failures.update(test for test, passed in results.items() if not passed)
            print(
                f"run {run + 1}/{options.runs}: {len(results)} tests, "
                f"{sum(not passed for passed in results.values())} failed, "
                f"{time.monotonic() - started:.0f} s, load {options.load} busy processes",
                flush=True,
            )
    print(f"\n{len(seen)} tests, {options.runs} runs, {len(failures)} flaky or failing")
    for test, count in sorted(failures.items(), key=lambda item: (-item[1], item[0])):
        print(f"{count}/{options.runs}  {test}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
