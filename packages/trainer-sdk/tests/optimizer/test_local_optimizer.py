"""The local optimizer's search over trials of the in-memory backend: the driver, the trials'
objective and the best result, with no process started."""

from __future__ import annotations

import math
from pathlib import Path

from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.backends.memory import InMemoryBackend, MemoryJob
from trainer_sdk.optimizer import (
    OptimizerClient,
    RandomSearch,
    Search,
    TrainJobTemplate,
    TrialConfig,
)


def train_fn(learning_rate: str, num_epochs: str) -> None:
    """Upstream's example shape (what the trials below would run)."""


def loss(learning_rate: float, epoch: int) -> float:
    return (math.log10(learning_rate) + 2) ** 2 + 1 / epoch


def run_trial(job: MemoryJob) -> None:
    """What ``train_fn`` reports with the parameters of the trial's env, then it completes."""
    env = {
        item["name"]: item["value"]
        for item in job.manifest["spec"]["trainer"].get("env") or ()
        if "value" in item
    }
    learning_rate = float(env["KUBEFLOW_TRAINER_OPT_LEARNING_RATE"])
    job.start()
    for epoch in range(1, int(env["KUBEFLOW_TRAINER_OPT_NUM_EPOCHS"]) + 1):
        job.record(epoch, loss=loss(learning_rate, epoch))
    job.complete()


def test_a_search_over_in_memory_trials_finds_the_best_one(tmp_path: Path) -> None:
    trainer = TrainerClient(backend=InMemoryBackend(run_trial))
    client = OptimizerClient(LocalBackendConfig(root=tmp_path), trainer=trainer)
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
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete" and len(job.trials) == 4
    assert {trial.trainjob.status for trial in job.trials} == {"Complete"}
    final = {
        trial.name: loss(
            float(trial.parameters["learning_rate"]), int(trial.parameters["num_epochs"])
        )
        for trial in job.trials
    }
    assert {trial.name: trial.objective for trial in job.trials} == final
    best = client.get_best_results(name)
    winner = min(job.trials, key=lambda trial: final[trial.name])
    assert best is not None and best.parameters == winner.parameters
