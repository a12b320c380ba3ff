"""Tuning on the local backend: random vs TPE vs TPE+ASHA, and the per-trial overhead.

A small real training function (momentum SGD on an ill-conditioned least-squares problem in
NumPy, one printed step per line) whose final loss depends on ``lr`` and ``momentum``;
``--trials`` trials of each search, ``--parallel`` at a time, all with seed 0. Reports the best
objective, wall time and the training steps run (pruned trials stop early), then the per-trial
overhead of the local backend against a plain in-process Optuna study running the same
function, side by side.

    python packages/trainer-sdk/benchmarks/bench_optimize.py [--trials 20] [--parallel 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

import optuna
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

STEPS = 30


def train(lr: float, momentum: float, steps: int = 30, rows: int = 10000) -> float:
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


def run_ours(root: Path, trials: int, parallel: int, **extra: object) -> tuple[float, float, int]:
    """Best objective, wall seconds and steps run by one optimization on the local backend."""
    client = OptimizerClient(LocalBackendConfig(root=root))
    start = time.perf_counter()
    name = client.optimize(
        TrainJobTemplate(trainer=CustomTrainer(func=train)),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--overhead-trials", type=int, default=10)
    arguments = parser.parse_args()
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
            rows.append((label, *run_ours(root, arguments.trials, arguments.parallel, **extra)))
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
