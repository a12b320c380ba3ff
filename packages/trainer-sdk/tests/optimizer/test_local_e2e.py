"""The local optimizer end to end: trials are real local TrainJobs."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import TrainerClient
from trainer_sdk.optimizer import (
    GridSearch,
    LocalBackendConfig,
    OptimizerClient,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.types import CustomTrainer
from waiting import wait_until

pytestmark = pytest.mark.e2e
GATES = str(Path(__file__).resolve().parent)  # gates.py: trials wait on the optimizer there


def train_fn(learning_rate: str, num_epochs: str) -> None:
    """Upstream's example shape: parameters arrive as keyword arguments; loss printed."""
    import math
    import time

    print(f"started={time.time()}")
    for epoch in range(1, int(num_epochs) + 1):
        print(f"epoch={epoch} loss={(math.log10(float(learning_rate)) + 2) ** 2 + 1 / epoch}")
    print(f"ended={time.time()}")


def test_upstreams_optimizer_example_runs_locally(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=TrainJobTemplate(
            runtime="torch-distributed", trainer=CustomTrainer(func=train_fn)
        ),
        trial_config=TrialConfig(num_trials=4, parallel_trials=2),
        search_space={
            "learning_rate": Search.loguniform(0.001, 0.1),
            "num_epochs": Search.choice([2, 3]),
        },
        algorithm=RandomSearch(random_state=1),
    )
    job = client.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert job.status == "Complete"
    assert len(job.trials) == 4
    intervals = []
    for trial in job.trials:
        assert trial.trainjob.status == "Complete"
        assert 0.001 <= float(trial.parameters["learning_rate"]) <= 0.1
        assert trial.parameters["num_epochs"] in ("2", "3")
        lines = list(client.get_job_logs(name, trial_name=trial.name))
        times = dict(
            line.split("=", 1) for line in lines if line.startswith(("started=", "ended="))
        )
        intervals.append((float(times["started"]), float(times["ended"])))
        epochs = int(trial.parameters["num_epochs"])
        lr = float(trial.parameters["learning_rate"])
        expected = (math.log10(lr) + 2) ** 2 + 1 / epochs
        assert trial.objective == pytest.approx(expected, rel=1e-12)
    # At most parallel_trials at a time.
    for start, _ in intervals:
        assert sum(s <= start < e for s, e in intervals) <= 2
    best = client.get_best_results(name)
    assert best is not None
    winner = min(job.trials, key=lambda trial: trial.objective or 0.0)
    assert best.parameters == winner.parameters
    assert best.metrics[0].name == "loss" and float(best.metrics[0].latest) == winner.objective
    # Another client (another process would do the same) sees the job from its state file.
    other = OptimizerClient(LocalBackendConfig(root=tmp_path))
    assert [j.name for j in other.list_jobs()] == [name]
    other.delete_job(name)
    assert other.list_jobs() == []
    with pytest.raises(RuntimeError, match="not found"):
        client.get_job(name)


def metrics_fn(quality: float, gates: str, root: str) -> None:
    """Reports with log_metrics; a low ``quality`` gives a bad curve. Each step waits until the
    optimizer has recorded (and so judged) the one before: pruning lands part way."""
    import sys

    from trainer_sdk import log_metrics

    sys.path.insert(0, gates)
    from gates import wait_until_recorded

    for step in range(1, 10):
        log_metrics({"loss": 1.0 / (quality * step)}, step=step)
        wait_until_recorded(root, step)


def test_successive_halving_stops_bad_trials_early(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=TrainJobTemplate(
            trainer=CustomTrainer(
                func=metrics_fn, func_args={"gates": GATES, "root": str(tmp_path)}
            )
        ),
        trial_config=TrialConfig(num_trials=5, parallel_trials=1),
        search_space={"quality": Search.uniform(0.1, 10.0)},
        algorithm=RandomSearch(random_state=3),
        early_stopping=SuccessiveHalving(min_resource=1, reduction_factor=2),
    )
    job = client.wait_for_job_status(name, timeout=300, polling_interval=1)
    pruned = [t for t in job.trials if t.pruned_at_step is not None]
    assert pruned, [(t.parameters, t.objective) for t in job.trials]
    for trial in pruned:
        assert trial.pruned_at_step is not None and trial.pruned_at_step < 9
        # Stopped and kept with its logs; pruned at the last rung (step 8) it may end first.
        assert trial.trainjob.status == "Stopped" or trial.pruned_at_step == 8
    best = client.get_best_results(name)
    assert best is not None
    finished = [t for t in job.trials if t.pruned_at_step is None]
    assert float(best.parameters["quality"]) == max(
        float(t.parameters["quality"]) for t in finished
    )


def failing_fn(threshold: float) -> None:
    from trainer_sdk import update_trainjob_status

    if threshold > 0.5:
        raise ValueError("diverged")
    update_trainjob_status(metrics={"loss": threshold})


def test_failed_trials_count_against_max_failed_trials(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=TrainJobTemplate(trainer=CustomTrainer(func=failing_fn)),
        trial_config=TrialConfig(num_trials=6, parallel_trials=2, max_failed_trials=0),
        search_space={"threshold": Search.uniform(0.0, 1.0)},
        algorithm=RandomSearch(random_state=0),
    )
    with pytest.raises(RuntimeError, match=f"OptimizationJob {name} is Failed"):
        client.wait_for_job_status(name, timeout=300, polling_interval=1)
    job = client.get_job(name)
    failed = [t for t in job.trials if t.trainjob.status == "Failed"]
    assert failed and all(
        float(t.parameters["threshold"]) > 0.5 for t in failed if t.objective is None
    )
    scored = [t for t in job.trials if t.objective is not None]
    assert all(t.objective == pytest.approx(float(t.parameters["threshold"])) for t in scored)


def diverging_fn(lr: str) -> None:
    """A run whose loss is NaN for large learning rates, as a diverged run's is."""
    from trainer_sdk import log_metrics

    log_metrics({"loss": float("nan") if float(lr) > 0.5 else float(lr)}, step=1)


def test_a_diverged_trial_never_wins_and_shows_its_nan(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=TrainJobTemplate(trainer=CustomTrainer(func=diverging_fn)),
        trial_config=TrialConfig(num_trials=4, parallel_trials=2),
        search_space={"lr": Search.choice([0.9, 0.3, 0.7, 0.1])},
        algorithm=GridSearch(),
    )
    job = client.wait_for_job_status(name, timeout=300, polling_interval=1)
    objectives = {t.parameters["lr"]: t.objective for t in job.trials}
    assert objectives["0.3"] == 0.3 and objectives["0.1"] == 0.1
    assert math.isnan(objectives["0.9"] or 0.0) and math.isnan(objectives["0.7"] or 0.0)
    best = client.get_best_results(name)
    assert best is not None and best.parameters == {"lr": "0.1"}
    assert job.best_trial_name == next(t.name for t in job.trials if t.parameters["lr"] == "0.1")


def gated_fn(x: str) -> None:
    """Reports its loss once the test opens the gate (a file the test creates)."""
    import os
    import pathlib
    import time

    gate = pathlib.Path(os.environ["OPTIMIZE_TEST_GATE"])
    deadline = time.monotonic() + 120
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{gate} was not created")
        time.sleep(0.05)
    print(f"loss={int(x) / 10}")


def test_a_search_whose_driver_is_killed_resumes_without_losing_or_repeating_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, gate = tmp_path / "root", tmp_path / "gate"
    monkeypatch.setenv("OPTIMIZE_TEST_GATE", str(gate))  # trials inherit their driver's env
    target = tmp_path / "trial.py"
    target.write_text(inspect.getsource(gated_fn))
    command = [
        sys.executable, "-m", "trainer_sdk", "--root", str(root), "optimize",
        f"{target}:gated_fn", "--param", "x=choice:1,2,3,4", "--algorithm", "grid",
        "--trials", "4", "--parallel", "2",
    ]  # fmt: skip
    driver = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    client = OptimizerClient(LocalBackendConfig(root=root))
    try:
        running = wait_until(
            lambda: [j for j in client.list_jobs() if len(j.trials) == 2], "two trials started"
        )
    finally:
        driver.kill()  # SIGKILL: no cleanup of any kind
        driver.wait(timeout=30)
    (job,) = running
    with pytest.raises(RuntimeError, match="is not being driven"):
        client.wait_for_job_status(job.name, timeout=60, polling_interval=1)
    gate.touch()  # the two trials started by the killed driver finish while none drives
    client.resume_job(job.name)
    with pytest.raises(ValueError, match="being driven already"):
        OptimizerClient(LocalBackendConfig(root=root)).resume_job(job.name)
    done = client.wait_for_job_status(job.name, timeout=300, polling_interval=1)
    assert done.status == "Complete"
    assert [t.name for t in done.trials] == [f"{job.name}-{n}" for n in range(4)]
    assert sorted(t.parameters["x"] for t in done.trials) == ["1", "2", "3", "4"]
    assert {t.trainjob.status for t in done.trials} == {"Complete"}
    assert [t.name for t in done.trials[:2]] == [t.name for t in job.trials]  # adopted
    trainjobs = sorted(j.name for j in TrainerClient(LocalBackendConfig(root=root)).list_jobs())
    assert trainjobs == [f"{job.name}-{n}" for n in range(4)]  # no trial ran twice
    assert done.best_trial_name == next(t.name for t in done.trials if t.parameters["x"] == "1")


def quick_fn(width: str) -> None:
    print(f"loss={int(width)}")


def test_a_warm_started_search_goes_on_from_the_earlier_one(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    options: dict[str, Any] = {
        "trial_template": TrainJobTemplate(trainer=CustomTrainer(func=quick_fn)),
        "search_space": {"width": Search.choice([4, 3, 2, 1])},
        "algorithm": GridSearch(),
        "trial_config": TrialConfig(num_trials=2, parallel_trials=2),
    }
    first = client.optimize(**options)
    client.wait_for_job_status(first, timeout=300, polling_interval=1)
    second = client.optimize(**options, warm_start=first)
    job = client.wait_for_job_status(second, timeout=300, polling_interval=1)
    # The grid's cells the first search ran are not run again; only this job's trials count.
    assert sorted(t.parameters["width"] for t in job.trials) == ["1", "2"]
    assert job.best_trial_name == f"{second}-1"
