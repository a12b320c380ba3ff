"""The local optimizer end to end: trials are real local TrainJobs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from trainer_sdk.optimizer import (
    LocalBackendConfig,
    OptimizerClient,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.types import CustomTrainer

pytestmark = pytest.mark.e2e


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


def metrics_fn(quality: float) -> None:
    """Reports with log_metrics; a low ``quality`` gives a bad curve."""
    import time

    from trainer_sdk import log_metrics

    for step in range(1, 10):
        log_metrics({"loss": 1.0 / (quality * step)}, step=step)
        time.sleep(0.3)


def test_successive_halving_stops_bad_trials_early(tmp_path: Path) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=TrainJobTemplate(trainer=CustomTrainer(func=metrics_fn)),
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
