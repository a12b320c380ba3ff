"""A bounded soak on loopback: many local jobs, a polled UI, streaming cache readers, kill -9,
checkpoints on one shared claim, suspend/resume storms.

    python tools/soak.py [--jobs 200] [--threads 8] [--readers 16] [--seed 0] [--root DIR]

JOBS local TrainJobs (a tiny function that prints numbered lines and logs one metric per line)
are submitted from THREADS threads through ``TrainerClient``. Each job is one of seven kinds,
drawn with SEED: ``clean`` (ends by itself), ``fails`` (raises on purpose), ``kill-rank``,
``kill-supervisor`` and ``kill-guardian`` (SIGKILL to its rank, or to the supervisor proper or
the guardian that ``supervisor.pid`` names: the rank once all its lines are written, a
supervisor process either as soon as both exist, before the rank has started, or once the
lines are written, drawn per job), ``checkpoint`` (a torch model checkpointed every 2 lines into
one claim that every such job shares, a directory each) and ``suspend`` (checkpointed every
line into the same claim; suspended and resumed ``--suspends`` times while it runs, every other
time with ``--concurrent-resumes`` ``resume_job`` calls at once). ``--only KIND`` makes every
job one kind. Meanwhile ``trainer ui`` (its own process, with a
token) is polled for ``/api/jobs`` and job logs, and READERS threads read a ``data-cache serve``
(its own process) through ``CacheDataset``, whole epochs, checking every row once. At the end it
checks, and prints in a table:

- every job is terminal and tells the truth: clean, checkpoint and suspend -> Complete; fails ->
  Failed naming the exception; kill-rank -> Failed, exit code -9; kill-supervisor and
  kill-guardian -> Failed, SupervisorLost; and the UI's job list says the same;
- checkpoints: the job's directory in the shared claim holds its last step, at most ``keep_last``
  complete checkpoints and nothing incomplete; a suspended job read Suspended after each
  suspend, has one ``Suspended`` and one ``Resumed`` event per cycle, and resumed from its
  checkpoints (``resumes.jsonl``);
- no line of a job is lost: each of its numbered log lines and metric steps is there;
- the UI answered every poll, each reader epoch had every row;
- nothing is left running: after the UI and the cache stop, no process under /proc names the
  soak's root in its command line or environment;
- the peak RSS (VmHWM) of the UI and of the cache stays under ``--ui-rss-mb``/``--cache-rss-mb``.

The exit status is 1 on any violation (each is printed), 0 otherwise. Everything binds
127.0.0.1; nothing leaves the machine. Every wait has a deadline (``--deadline``).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from trainer_sdk import (
    CheckpointVolume,
    CustomTrainer,
    JobFailedError,
    LocalBackendConfig,
    TrainerClient,
    checkpoint,
    constants,
)
from trainer_sdk.local_storage import list_claims

__all__ = ["KINDS", "main", "soak_job"]

KINDS = (
    "clean",
    "fails",
    "kill-rank",
    "kill-supervisor",
    "kill-guardian",
    "checkpoint",
    "suspend",
)
WEIGHTS = (0.35, 0.10, 0.10, 0.10, 0.10, 0.15, 0.10)
KILL_STAGES = ("starting", "running")  # when a supervisor process is killed
CHECKPOINTED = ("checkpoint", "suspend")
CLAIM = "soak-checkpoints"  # one persistentVolumeClaim for every checkpointing job
KEEP_LAST = 2
START_SECONDS = 180.0  # a child's imports (pyarrow, torch) on a loaded 2-core machine
FAILURE_TEXT = "soak failure on purpose"
ROWS = 50_000


def soak_job(lines: int, kind: str) -> None:
    """The jobs' function: ``lines`` numbered lines and metric steps, then its kind's ending;
    checkpointing kinds train a small model, saving every 2 lines (every line for ``suspend``,
    which also paces its lines so that it can be suspended while it runs)."""
    import time

    import trainer_sdk

    if kind in ("checkpoint", "suspend"):
        import torch
        from trainer_sdk import checkpoint

        torch.manual_seed(0)
        model = torch.nn.Linear(8, 8)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        every, pause = (1, 0.5) if kind == "suspend" else (2, 0.0)
        state = {"model": model, "optimizer": optimizer}
        with checkpoint.Checkpointer(state, every=every, keep_last=2) as ckpt:
            for line in range(ckpt.restore(), lines):
                optimizer.zero_grad()
                model(torch.ones(2, 8)).sum().backward()
                optimizer.step()
                print(f"soak-line {line}", flush=True)
                trainer_sdk.log_metrics({"line": float(line)}, step=line)
                time.sleep(pause)
                ckpt.step(line + 1)
        return
    for line in range(lines):
        print(f"soak-line {line}", flush=True)
        trainer_sdk.log_metrics({"line": float(line)}, step=line)
    if kind == "fails":
        raise RuntimeError("soak failure on purpose")
    if kind.startswith("kill"):
        print("soak-waiting", flush=True)
        time.sleep(600)  # the soak kills it; a soak that did not fails on its deadline


@dataclass
class Outcome:
    """One job: what it was, what happened to it, what the checks found."""

    index: int
    kind: str
    name: str = ""
    status: str = ""
    message: str = ""
    killed: str = ""
    stage: str = ""  # when a supervisor process was killed
    suspends: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


@dataclass
class Figures:
    """What the pollers and readers counted."""

    ui_requests: int = 0
    ui_latencies: list[float] = field(default_factory=list)
    reader_epochs: int = 0
    reader_rows: int = 0
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problem(self, text: str) -> None:
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(text)


# -- the processes under test ----------------------------------------------------------------------
class Child:
    """A child process whose first line matching ``pattern`` (on stdout or stderr) is awaited."""

    def __init__(self, args: list[str], pattern: str, stream: str, log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE if stream == "stdout" else open(log, "w"),  # noqa: SIM115
            stderr=subprocess.PIPE if stream == "stderr" else open(log, "w"),  # noqa: SIM115
            text=True,
            start_new_session=True,
        )
        pipe = self.process.stdout if stream == "stdout" else self.process.stderr
        assert pipe is not None
        found: queue.Queue[str] = queue.Queue()

        def read() -> None:
            with open(log.with_suffix(".out"), "w") as copy:
                for line in pipe:
                    copy.write(line)
                    match = re.search(pattern, line)
                    if match:
                        found.put(match.group(1))

        threading.Thread(target=read, daemon=True).start()
        try:
            self.address = found.get(timeout=START_SECONDS)
        except queue.Empty:
            self.stop()
            message = f"{args[:4]}: nothing matching {pattern!r} in {START_SECONDS:g} s"
            raise SystemExit(message) from None

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise SystemExit(f"no VmHWM for {self.process.pid}")

    def stop(self, how: signal.Signals = signal.SIGTERM) -> int | None:
        """Ask it to end with ``how``; its exit status, or None where SIGKILL was needed."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=60)
                return None
        return self.process.returncode


def start_cache(root: Path) -> Child:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = root / "data" / "soak.parquet"
    data.parent.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array(range(ROWS), pa.int64())}), data)
    args = [sys.executable, "-m", "trainer_data_cache", "serve", str(data), "--name", "soak"]
    return Child(args, r"^(grpc://\S+)", "stdout", root / "cache.log")


def start_ui(root: Path, token: str) -> Child:
    args = [sys.executable, "-m", "trainer_sdk", "--backend", "local", "--root", str(root / "jobs")]
    args += ["ui", "--port", "0", "--token", token]
    return Child(args, r"open (http://\S+?)/\?token=", "stderr", root / "ui.log")


# -- load: UI pollers and cache readers ------------------------------------------------------------
def poll_ui(
    url: str, token: str, names: list[str], stop: threading.Event, figures: Figures
) -> None:
    """``/api/jobs`` and one known job's log, in turn, until ``stop``."""
    headers = {"Authorization": f"Bearer {token}"}
    turn = 0
    while not stop.is_set():
        turn += 1
        path = "/api/jobs?limit=50"
        if turn % 2 == 0 and names:
            path = f"/api/jobs/{urllib.parse.quote(random.choice(names))}/logs?step=node-0"
        started = time.monotonic()
        try:
            request = urllib.request.Request(url + path, headers=headers)
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()
        except OSError as error:  # HTTPError included: every poll must succeed
            figures.problem(f"ui: GET {path}: {error}")
        with figures.lock:
            figures.ui_requests += 1
            figures.ui_latencies.append(time.monotonic() - started)


def read_cache(endpoint: str, stop: threading.Event, figures: Figures) -> None:
    """Whole epochs of the cache's data set until ``stop``: every row exactly once."""
    from trainer_data_cache import CacheDataset

    expected = ROWS * (ROWS - 1) // 2
    while not stop.is_set():
        rows = total = 0
        try:
            for batch in CacheDataset(endpoint, "soak", batch_rows=4096, rank=0, world_size=1):
                rows += len(batch["id"])
                total += int(batch["id"].sum())
        except Exception as error:  # every failure of a reader is a finding, reported below
            figures.problem(f"reader: {type(error).__name__}: {error}")
            continue
        if (rows, total) != (ROWS, expected):
            figures.problem(f"reader: an epoch read {rows} rows summing to {total}")
        with figures.lock:
            figures.reader_epochs += 1
            figures.reader_rows += rows


# -- the jobs --------------------------------------------------------------------------------------
def ancestors() -> set[int]:
    """This process and those above it (whose command lines may name the root)."""
    found, pid = set(), os.getpid()
    while pid > 1:
        found.add(pid)
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return found


def our_processes(root: Path) -> dict[int, str]:
    """Live processes naming ``root`` in their command line or environment: pid -> command."""
    mark, skipped = str(root).encode(), ancestors()
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in skipped:
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            environ = Path(entry.path, "environ").read_bytes()
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (mark in cmdline or mark in environ):
            # The whole command line: an interpreter's path alone can be longer than any cut.
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


SUPERVISOR_MODULE = "trainer_sdk.backends.local.supervisor"


def victim(job_dir: Path, kind: str) -> int | None:
    """The process to kill: the job's rank, its guardian (the process ``supervisor.pid``
    names) or the supervisor proper (the other process running the supervisor module)."""
    processes = our_processes(job_dir)
    if kind == "kill-rank":
        ranks = [pid for pid, command in processes.items() if "rank_entrypoint" in command]
        return ranks[0] if ranks else None
    supervisors = sorted(pid for pid, command in processes.items() if SUPERVISOR_MODULE in command)
    try:
        guardian = int((job_dir / "supervisor.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if len(supervisors) != 2 or guardian not in supervisors:
        return None
    return guardian if kind == "kill-guardian" else next(p for p in supervisors if p != guardian)


def wait_for(predicate: Callable[[], object], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # polling interval; the deadline bounds the wait
    return True


def lines_written(client: TrainerClient, name: str) -> set[int]:
    """The numbered lines job ``name`` has logged so far."""
    logged = re.findall(r"soak-line (\d+)", "\n".join(client.get_job_logs(name)))
    return {int(line) for line in logged}


def run_job(client: TrainerClient, outcome: Outcome, args: argparse.Namespace, seed: int) -> None:
    """Submit one job, do to it what its kind says (kill, suspend and resume), wait until it
    ends."""
    started, lines, deadline = time.monotonic(), args.lines, args.deadline
    options = [CheckpointVolume(CLAIM)] if outcome.kind in CHECKPOINTED else []
    outcome.name = client.train(
        trainer=CustomTrainer(func=soak_job, func_args={"lines": lines, "kind": outcome.kind}),
        options=options,
    )
    if outcome.kind.startswith("kill"):
        kill(client, outcome, lines, deadline, random.Random(seed))
    elif outcome.kind == "suspend":
        deadline *= 1 + args.suspends  # each cycle starts the job's processes again
        storm(client, outcome, args.suspends, args.concurrent_resumes, deadline)
    failure = ""
    try:
        client.wait_for_job_status(outcome.name, timeout=deadline, polling_interval=1)
    except JobFailedError as error:  # what the user reads: the condition and the exception
        failure = str(error)
    except TimeoutError:
        pass  # the state check below reports the job as not terminal
    job = client.get_job(outcome.name)
    outcome.status, outcome.message = job.status, f"{job.message or ''} | {failure}"
    outcome.seconds = time.monotonic() - started


def kill(
    client: TrainerClient, outcome: Outcome, lines: int, deadline: float, chooser: random.Random
) -> None:
    """SIGKILL to the process the kind names: a rank once its lines are written; a supervisor
    process at the stage drawn (as soon as both exist, or once the lines are written)."""
    job_dir = client.backend.root / outcome.name  # type: ignore[attr-defined]
    outcome.stage = "running" if outcome.kind == "kill-rank" else chooser.choice(KILL_STAGES)

    def written() -> bool:
        logs = "\n".join(client.get_job_logs(outcome.name))
        steps = {point.step for point in client.get_job_metrics(outcome.name)}
        return "soak-waiting" in logs and len(steps) == lines

    pid = None
    if outcome.stage == "starting" or wait_for(written, deadline):
        wait_for(lambda: victim(job_dir, outcome.kind), deadline)  # a slow start under load
        pid = victim(job_dir, outcome.kind)
    if pid is None:
        outcome.problems.append(f"{outcome.kind}: no process to kill within the deadline")
        client.delete_job(outcome.name)
        return
    os.kill(pid, signal.SIGKILL)
    outcome.killed = str(pid)


def storm(
    client: TrainerClient, outcome: Outcome, cycles: int, at_once: int, deadline: float
) -> None:
    """Suspend the running job and resume it, ``cycles`` times; every other resume is
    ``at_once`` ``resume_job`` calls at once."""
    name = outcome.name
    for cycle in range(cycles):
        if not wait_for(functools.partial(progressed, client, name, cycle + 2), deadline):
            outcome.problems.append(f"suspend: no progress before cycle {cycle}")
            return
        if client.get_job(name).status != constants.TRAINJOB_RUNNING:
            return  # ended already: the checks say whether it was right
        client.suspend_job(name)
        if not wait_for(lambda: client.get_job(name).status == constants.TRAINJOB_SUSPENDED, 120):
            outcome.problems.append(
                f"suspend: cycle {cycle} reads {client.get_job(name).status}, not Suspended"
            )
            return
        errors = resume_at_once(client, name, at_once if cycle % 2 else 1)
        outcome.problems += [f"suspend: resume_job in cycle {cycle}: {e}" for e in errors]
        outcome.suspends += 1


def progressed(client: TrainerClient, name: str, lines: int) -> bool:
    """Whether job ``name`` has logged ``lines`` numbered lines."""
    return len(lines_written(client, name)) >= lines


def resume_at_once(client: TrainerClient, name: str, calls: int) -> list[str]:
    """``calls`` ``resume_job(name)`` from as many threads at once; their errors."""
    errors: list[str] = []
    ready = threading.Barrier(calls)

    def resume() -> None:
        try:
            ready.wait(timeout=60)
            client.resume_job(name)
        except Exception as error:  # each is a finding, reported by the caller
            errors.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=resume) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    return errors


EXPECTED = {
    "clean": (constants.TRAINJOB_COMPLETE, ""),
    "fails": (constants.TRAINJOB_FAILED, FAILURE_TEXT),
    "kill-rank": (constants.TRAINJOB_FAILED, "exited with code -9"),
    "kill-supervisor": (constants.TRAINJOB_FAILED, "SupervisorLost"),
    "kill-guardian": (constants.TRAINJOB_FAILED, "SupervisorLost"),
    "checkpoint": (constants.TRAINJOB_COMPLETE, ""),
    "suspend": (constants.TRAINJOB_COMPLETE, ""),
}


def check_job(client: TrainerClient, outcome: Outcome, lines: int, root: Path) -> None:
    """The truthful-state, checkpoint and no-lost-line checks of one finished job."""
    expected_status, reason = EXPECTED[outcome.kind]
    if outcome.status != expected_status or reason not in outcome.message:
        outcome.problems.append(
            f"{outcome.kind}: {outcome.status} ({outcome.message[:160]!r}); expected "
            f"{expected_status} naming {reason!r}"
        )
    if not outcome.name or outcome.problems or outcome.stage == "starting":
        return  # a job killed as it started was never going to write its lines
    if outcome.kind in CHECKPOINTED:
        outcome.problems += check_checkpoints(client, outcome, lines, root)
    missing = sorted(set(range(lines)) - lines_written(client, outcome.name))
    if missing:
        outcome.problems.append(f"log lines lost: {missing[:10]}")
    points = client.get_job_metrics(outcome.name)
    steps = {point.step for point in points if "line" in point.values}
    if steps != set(range(lines)):
        outcome.problems.append(f"metric steps lost: {sorted(set(range(lines)) - steps)[:10]}")


def check_checkpoints(client: TrainerClient, outcome: Outcome, lines: int, root: Path) -> list[str]:
    """The job's own directory in the shared claim: its last step, at most KEEP_LAST complete
    checkpoints, nothing incomplete; a suspended job's events and restores."""
    [claim] = [c.path for c in list_claims(root) if (c.namespace, c.name) == ("default", CLAIM)]
    directory = claim / outcome.name
    complete = [found.step for found in checkpoint.checkpoints(directory)]
    problems = []
    if not complete or complete[-1] != lines or len(complete) > KEEP_LAST:
        problems.append(f"checkpoints: {complete} in {directory}, expected ..., {lines}")
    others = sorted(
        p.name
        for p in directory.glob("step-*")
        if p.name not in {f"step-{s:09d}" for s in complete}
    )
    if others:
        problems.append(f"checkpoints: incomplete directories left: {others}")
    if outcome.kind == "suspend":
        reasons = Counter(event.reason for event in client.get_job_events(outcome.name))
        if (reasons["Suspended"], reasons["Resumed"]) != (outcome.suspends, outcome.suspends):
            problems.append(
                f"suspend: {outcome.suspends} cycles, events Suspended {reasons['Suspended']}, "
                f"Resumed {reasons['Resumed']}"
            )
        resumes = checkpoint.read_resumes(directory)
        if len(resumes) != outcome.suspends:
            problems.append(f"suspend: {outcome.suspends} cycles, {len(resumes)} restores")
    return problems


def check_ui_list(url: str, token: str, outcomes: Sequence[Outcome]) -> list[str]:
    """The UI's job list must show every job with the status the client read."""
    request = urllib.request.Request(
        url + "/api/jobs", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        rows = {row["name"]: row["status"] for row in json.loads(answer.read())}
    return [
        f"ui: {outcome.name} reads {rows.get(outcome.name)!r}, the client {outcome.status!r}"
        for outcome in outcomes
        if outcome.name and rows.get(outcome.name) != outcome.status
    ]


# -- the report ------------------------------------------------------------------------------------
def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def print_table(rows: Sequence[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def draw_kinds(jobs: int, chooser: random.Random) -> list[str]:
    """``jobs`` kinds in WEIGHTS' proportions (each kind at least once from seven jobs),
    shuffled."""
    counts = [max(1, round(weight * jobs)) if jobs >= len(KINDS) else 0 for weight in WEIGHTS]
    counts[0] = jobs - sum(counts[1:]) if jobs >= len(KINDS) else jobs
    kinds = [kind for kind, count in zip(KINDS, counts, strict=True) for _ in range(count)]
    chooser.shuffle(kinds)
    return kinds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--readers", type=int, default=16)
    parser.add_argument("--lines", type=int, default=20, help="Numbered lines per job.")
    parser.add_argument("--suspends", type=int, default=3, help="Cycles per suspend job.")
    parser.add_argument(
        "--concurrent-resumes", type=int, default=2, help="resume_job calls at once (odd cycles)."
    )
    parser.add_argument("--only", choices=KINDS, default=None, help="Every job of this kind.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deadline", type=int, default=300, help="Seconds per job.")
    parser.add_argument("--ui-rss-mb", type=float, default=400.0)
    parser.add_argument("--cache-rss-mb", type=float, default=1024.0)
    parser.add_argument("--root", type=Path, default=None, help="Default: a new temporary dir.")
    args = parser.parse_args(argv)
    for name in ("jobs", "threads", "lines", "suspends", "concurrent_resumes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: expected at least 1")
    if args.readers < 0:
        parser.error("--readers: expected 0 or more")
    return args


@contextlib.contextmanager
def soak_root(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="soak-") as directory:
        yield Path(directory).resolve()


def _end_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # runs the clean-up: the UI, the cache and the jobs stop


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _end_on_sigterm)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: where each thread is
    with soak_root(args.root) as root:
        return soak(args, root)


def soak(args: argparse.Namespace, root: Path) -> int:
    chooser = random.Random(args.seed)
    drawn = [args.only] * args.jobs if args.only else draw_kinds(args.jobs, chooser)
    outcomes = [Outcome(index, kind) for index, kind in enumerate(drawn)]
    token = f"soak-{chooser.getrandbits(64):016x}"
    figures, stop = Figures(), threading.Event()
    cache, ui = start_cache(root), start_ui(root, token)
    client = TrainerClient(LocalBackendConfig(root=root / "jobs", stop_on_exit=True))
    names: list[str] = []
    load = [threading.Thread(target=poll_ui, args=(ui.address, token, names, stop, figures))]
    load += [
        threading.Thread(target=read_cache, args=(cache.address, stop, figures))
        for _ in range(args.readers)
    ]
    for thread in load:
        thread.start()
    started = time.monotonic()

    def one(outcome: Outcome) -> None:
        try:
            run_job(client, outcome, args, args.seed + outcome.index)
        except Exception as error:  # a job the client could not run is a finding
            outcome.problems.append(f"{type(error).__name__}: {error}")
        if outcome.name:
            names.append(outcome.name)
        check_job(client, outcome, args.lines, root / "jobs")
        stage = f" ({outcome.stage})" if outcome.stage and outcome.kind != "kill-rank" else ""
        print(
            f"job {outcome.index} {outcome.name} {outcome.kind}{stage} -> {outcome.status} "
            f"in {outcome.seconds:.0f} s{' (problems)' if outcome.problems else ''}",
            file=sys.stderr,
            flush=True,
        )

    try:
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(one, outcomes))
        elapsed = time.monotonic() - started
        list_problems = check_ui_list(ui.address, token, outcomes)
    finally:
        stop.set()
        for thread in load:
            thread.join(timeout=120)
        ui_rss, cache_rss = ui.peak_rss_mb(), cache.peak_rss_mb()
        ui_exit, cache_exit = ui.stop(signal.SIGINT), cache.stop(signal.SIGTERM)
    client.backend.close()  # type: ignore[attr-defined]
    wait_for(lambda: not our_processes(root), 30)
    left = our_processes(root)
    problems = [f"job {o.index} {o.name} {p}" for o in outcomes for p in o.problems]
    problems += list_problems + figures.problems
    problems += [f"left running: {pid} {command}" for pid, command in left.items()]
    if ui_exit != 0 or cache_exit != 0:
        problems.append(f"exit status on stop: ui {ui_exit}, cache {cache_exit} (None: SIGKILL)")
    if ui_rss > args.ui_rss_mb or cache_rss > args.cache_rss_mb:
        problems.append(f"peak RSS over the bound: ui {ui_rss:.0f} MB, cache {cache_rss:.0f} MB")
    kinds = Counter(o.kind for o in outcomes)
    statuses = Counter(f"{o.kind}->{o.status}" for o in outcomes)
    stages = Counter(f"{o.kind} {o.stage}" for o in outcomes if o.killed and o.kind != "kill-rank")
    seconds = [o.seconds for o in outcomes]
    print_table(
        [
            ("jobs", f"{args.jobs} from {args.threads} threads in {elapsed:.0f} s"),
            ("kinds", ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS)),
            ("outcomes", ", ".join(f"{key} {n}" for key, n in sorted(statuses.items()))),
            (
                "kills",
                f"{sum(1 for o in outcomes if o.killed)} ("
                + ", ".join(f"{key} {n}" for key, n in sorted(stages.items()))
                + ")",
            ),
            ("suspends", f"{sum(o.suspends for o in outcomes)} suspend/resume cycles"),
            ("job seconds p50/max", f"{percentile(seconds, 0.5):.1f} / {max(seconds):.1f}"),
            ("lines checked", f"{args.jobs * args.lines} log lines + as many metric steps"),
            ("ui polls", f"{figures.ui_requests}"),
            (
                "ui latency p50/p99/max",
                " / ".join(
                    f"{percentile(figures.ui_latencies, q) * 1000:.0f} ms" for q in (0.5, 0.99, 1)
                ),
            ),
            ("reader epochs", f"{figures.reader_epochs} ({figures.reader_rows} rows)"),
            (
                "peak RSS",
                f"ui {ui_rss:.0f} MB (bound {args.ui_rss_mb:g}), "
                f"cache {cache_rss:.0f} MB (bound {args.cache_rss_mb:g})",
            ),
            ("left running", str(len(left))),
            ("violations", str(len(problems))),
        ]
    )
    for problem in problems:
        print(f"VIOLATION {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
