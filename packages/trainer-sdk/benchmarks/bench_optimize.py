"""Tuning on the local backend: random vs TPE vs TPE+ASHA, and the per-trial overhead.

A small real training function (momentum SGD on an ill-conditioned least-squares problem in
NumPy, one printed step per line) whose final loss depends on ``lr`` and ``momentum``;
``--trials`` trials of each search, ``--parallel`` at a time, all with seed 0. Reports the best
objective, wall time and the training steps run (pruned trials stop early), then the per-trial
overhead of the local backend against a plain in-process Optuna study running the same
function, side by side.

    python packages/trainer-sdk/benchmarks/bench_optimize.py [--trials 20] [--parallel 2]
        [--against REV]

``--against REV`` first runs REV's own copy of this benchmark (``git archive`` of REV, its
packages put first on ``PYTHONPATH``, so its trials run its code too), then this tree's, and
prints both side by side: the comparison with an issue's base in one run.

``--core`` runs no processes: the search core alone, each trial's curve computed in-process and
handed to the stopping rule one step at a time (``--parallel`` trials interleaved), for several
ASHA settings: the steps the rule itself saves, without the driver's reaction time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import optuna
from trainer_api import EarlyStopping
from trainer_sdk import CustomTrainer
from trainer_sdk.optimizer import (
    LocalBackendConfig,
    OptimizerClient,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TPESearch,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_search import Range, Study, TrialRecord, check_pruning, suggest

STEPS = 30
ROWS = 500_000
"""Rows of the problem (``train``'s default too, written there as a literal: its source travels
to the trial without this module). A full-batch step over them takes about 50 ms here: short
for a training step (an epoch, seconds), but long enough that a trial is not over before the
driver reads its rung (with 10,000 rows a step took 1 ms and most trials ended first)."""


def train(lr: float, momentum: float, steps: int = 30, rows: int = 500_000) -> float:
    """Momentum SGD on a fixed, ill-conditioned least-squares problem (feature scales 1 to 30):
    the loss after ``steps`` depends on both parameters; prints ``step=N loss=X`` per step."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 64)) * np.geomspace(1.0, 30.0, 64)
    y = x @ rng.standard_normal(64) + 0.01 * rng.standard_normal(rows)
    w = np.zeros(64)
    velocity = np.zeros(64)
    loss = float("inf")
    for step in range(1, steps + 1):
        residual = x @ w - y
        loss = float(residual @ residual / rows)
        if not np.isfinite(loss) or loss > 1e6:
            loss = 1e6  # diverged: the worst value, and no further steps change it
        else:
            velocity = momentum * velocity - lr * (x.T @ residual / rows)
            w = w + velocity
        print(f"step={step} loss={loss}", flush=True)
    return loss


def space() -> dict[str, object]:
    return {"lr": Search.loguniform(1e-5, 1e-1), "momentum": Search.uniform(0.0, 0.99)}


def run_ours(
    root: Path, trials: int, parallel: int, rows: int, **extra: object
) -> tuple[float, float, int]:
    """Best objective, wall seconds and steps run by one optimization on the local backend."""
    client = OptimizerClient(LocalBackendConfig(root=root))
    start = time.perf_counter()
    name = client.optimize(
        TrainJobTemplate(trainer=CustomTrainer(func=train, func_args={"rows": rows})),
        trial_config=TrialConfig(num_trials=trials, parallel_trials=parallel),
        search_space=space(),
        **extra,  # type: ignore[arg-type]
    )
    job = client.wait_for_job_status(name, timeout=3600, polling_interval=1)
    wall = time.perf_counter() - start
    steps = 0
    for trial in job.trials:
        lines = list(client.get_job_logs(name, trial_name=trial.name))
        steps += sum(line.startswith("step=") for line in lines)
    best = min(
        t.objective for t in job.trials if t.objective is not None and t.pruned_at_step is None
    )
    return best, wall, steps


def trivial(lr: float, momentum: float) -> None:
    """No training: what a trial costs beyond its function."""
    print(f"loss={lr * momentum}", flush=True)


def overhead(root: Path, trials: int) -> tuple[float, float]:
    """Seconds per trial: our local backend (one at a time) and an in-process Optuna study."""
    client = OptimizerClient(LocalBackendConfig(root=root))
    start = time.perf_counter()
    name = client.optimize(
        TrainJobTemplate(trainer=CustomTrainer(func=trivial)),
        trial_config=TrialConfig(num_trials=trials, parallel_trials=1),
        search_space=space(),
        algorithm=RandomSearch(random_state=0),
    )
    client.wait_for_job_status(name, timeout=3600, polling_interval=1)
    ours = (time.perf_counter() - start) / trials
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    start = time.perf_counter()

    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        momentum = trial.suggest_float("momentum", 0.0, 0.99)
        with contextlib.redirect_stdout(io.StringIO()):  # ours writes it to the trial's log
            trivial(lr, momentum)
        return lr * momentum

    study.optimize(objective, n_trials=trials)
    return ours, (time.perf_counter() - start) / trials


def curve(lr: float, momentum: float) -> list[float]:
    """The loss ``train`` prints at each step."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        train(lr, momentum)
    return [float(line.split("loss=")[1]) for line in out.getvalue().splitlines()]


def core_run(
    trials: int, parallel: int, algorithm: str, rule: EarlyStopping | None
) -> tuple[float, int]:
    """Best complete loss and steps run by the search core alone, stepped in lockstep."""
    space = {"lr": Range(1e-5, 1e-1, log=True), "momentum": Range(0.0, 0.99)}
    study = Study(space=space, algorithm=algorithm, seed=0, early_stopping=rule)  # type: ignore[arg-type]
    records: list[TrialRecord] = []
    curves: dict[int, list[float]] = {}
    running: list[int] = []
    steps_run = 0
    while len(records) < trials or running:
        free = min(parallel - len(running), trials - len(records))
        for found in suggest(study, records, free) if free > 0 else []:
            number = len(records)
            records.append(TrialRecord(number, found.parameters, engine_state=found.engine_state))
            curves[number] = curve(
                float(found.parameters["lr"]), float(found.parameters["momentum"])
            )
            running.append(number)
        for number in list(running):
            step = len(records[number].steps) + 1
            steps = {**records[number].steps, step: curves[number][step - 1]}
            record = records[number] = dataclasses.replace(records[number], steps=steps)
            if step == STEPS:
                records[number] = dataclasses.replace(
                    record, state="complete", objective=steps[step]
                )
            elif rule is not None:
                decision = check_pruning(study, records, number)
                record = records[number] = dataclasses.replace(
                    record, checked_step=decision.checked_step, engine_state=decision.engine_state
                )
                if decision.prune:
                    records[number] = dataclasses.replace(
                        record, state="pruned", objective=steps[step]
                    )
            if records[number].state != "running":
                running.remove(number)
                steps_run += step
    best = min(r.objective for r in records if r.state == "complete" and r.objective is not None)
    return best, steps_run


def core_table(trials: int, parallel: int) -> None:
    """The search core's own savings for several ASHA settings, against random and TPE."""
    rows = [("random", core_run(trials, parallel, "random", None))]
    rows.append(("TPE", core_run(trials, parallel, "tpe", None)))
    for low, factor in ((1, 2), (3, 2), (1, 3), (3, 3), (5, 3)):
        rule = EarlyStopping(rule="asha", min_resource=low, reduction_factor=factor)
        rows.append((f"TPE + ASHA {low}/{factor}", core_run(trials, parallel, "tpe", rule)))
    print(f"search core only: {trials} trials, {parallel} in lockstep, {STEPS} steps, seed 0")
    print(f"{'search (min_resource/factor)':<40} {'best loss':>12} {'steps':>6} {'saved':>6}")
    for label, (best, steps) in rows:
        print(f"{label:<40} {best:>12.6f} {steps:>6d} {1 - steps / (trials * STEPS):>6.0%}")


LABELS = ("random", "TPE + ASHA", "TPE", "local backend", "in-process Optuna", "overhead")


def parse_tables(output: str) -> dict[str, list[str]]:
    """The benchmark's printed rows by label: the values after the label, as printed."""
    rows = {}
    for line in output.splitlines():
        label = next((label for label in LABELS if line.startswith(label + " ")), None)
        if label is not None:
            rows[label] = line[len(label) :].split()
    return rows


def run_baseline(rev: str, arguments: list[str]) -> str:
    """What REV's copy of this benchmark prints, its own packages imported first."""
    root = Path(__file__).resolve().parents[3]
    with tempfile.TemporaryDirectory() as directory:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev, "packages"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(directory, filter="data")
        base = Path(directory) / "packages"
        path = os.pathsep.join(str(src) for src in sorted(base.glob("*/src")))
        env = {**os.environ, "PYTHONPATH": path}
        script = base / "trainer-sdk" / "benchmarks" / "bench_optimize.py"
        return subprocess.run(
            [sys.executable, str(script), *arguments],
            env=env,
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
        ).stdout


def side_by_side(rev: str, base: str, ours: str) -> None:
    """Both runs' rows, REV's value first in each column."""
    before, after = parse_tables(base), parse_tables(ours)
    print(f"issue base {rev} | this tree, the same run")
    print(f"{'search':<12} {'best loss':>25} {'wall s':>15} {'steps run':>13} {'saved':>13}")
    for label in ("random", "TPE", "TPE + ASHA"):
        pairs = [f"{b} | {a}" for b, a in zip(before[label], after[label], strict=True)]
        print(f"{label:<12} {pairs[0]:>25} {pairs[1]:>15} {pairs[2]:>13} {pairs[3]:>13}")
    print()
    print("per-trial seconds (a trivial function, one at a time)")
    for label in ("local backend", "in-process Optuna", "overhead"):
        print(f"{label:<18} {before[label][0]:>8} | {after[label][0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--overhead-trials", type=int, default=10)
    parser.add_argument(
        "--rows",
        type=int,
        default=ROWS,
        help="rows of the least-squares problem: its size sets a training step's length",
    )
    parser.add_argument("--core", action="store_true", help="the search core alone, no processes")
    parser.add_argument("--against", metavar="REV", help="also run REV's copy, side by side")
    arguments = parser.parse_args()
    if arguments.against:
        forwarded = [
            f"--trials={arguments.trials}",
            f"--parallel={arguments.parallel}",
            f"--overhead-trials={arguments.overhead_trials}",
            f"--rows={arguments.rows}",
        ]
        base = run_baseline(arguments.against, forwarded)
        ours = subprocess.run(
            [sys.executable, __file__, *forwarded], capture_output=True, text=True, check=True
        ).stdout
        print(base, ours, sep="\n")
        side_by_side(arguments.against, base, ours)
        return
    if arguments.core:
        core_table(arguments.trials, arguments.parallel)
        return
    searches = {
        "random": {"algorithm": RandomSearch(random_state=0)},
        "TPE": {"algorithm": TPESearch(random_state=0)},
        "TPE + ASHA": {
            "algorithm": TPESearch(random_state=0),
            "early_stopping": SuccessiveHalving(min_resource=3, reduction_factor=2),
        },
    }
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for label, extra in searches.items():
            root = Path(directory) / label.replace(" ", "")
            rows.append(
                (
                    label,
                    *run_ours(root, arguments.trials, arguments.parallel, arguments.rows, **extra),
                )
            )
        ours, in_process = overhead(Path(directory) / "overhead", arguments.overhead_trials)
    full = arguments.trials * STEPS
    print(f"{arguments.trials} trials, {arguments.parallel} at a time, {STEPS} steps each, seed 0")
    print(f"{'search':<12} {'best loss':>12} {'wall s':>8} {'steps run':>10} {'saved':>7}")
    for label, best, wall, steps in rows:
        print(f"{label:<12} {best:>12.6f} {wall:>8.1f} {steps:>10d} {1 - steps / full:>7.0%}")
    print()
    count = arguments.overhead_trials
    print(f"per-trial seconds ({count} trials of a trivial function, one at a time)")
    print(f"{'local backend':<16} {ours:>8.3f}")
    print(f"{'in-process Optuna':<16} {in_process:>8.3f}")
    print(f"{'overhead':<16} {ours - in_process:>8.3f}")


if __name__ == "__main__":
    main()
