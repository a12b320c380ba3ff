"""A search over a TRL fine-tune: what ``optimize()`` refuses before any trial starts (a
parameter that sets no TRL setting, an objective the engine never reports), a trial's
parameters reaching TRL as its own arguments over the job's (unit: the pod's argument list), and
through OptimizerClient on the local backend: grid trials of a fine-tune, each training at its
own learning rate and LoRA rank, the best by the logged loss; and ASHA stopping a trial from the
engine's per-step loss."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import (
    DPO,
    BuiltinTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LoraConfig,
    TorchTuneConfig,
    TrainerClient,
    TRLConfig,
)
from trainer_sdk.optimizer import (
    GridSearch,
    LocalBackendConfig,
    Objective,
    OptimizerClient,
    Search,
    SuccessiveHalving,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.optimizer.spec import Definition, requested_job
from trainer_sdk.training.engines import trl_methods, trl_search, trl_trainers


def test_trial_parameters_become_trl_arguments_after_the_jobs() -> None:
    environ = {"KUBEFLOW_TRAINER_OPT_LORA_R": "4", "KUBEFLOW_TRAINER_OPT_BETA": "0.2", "PATH": "/"}
    assert trl_trainers.search_arguments("dpo", environ) == ["--beta=0.2", "--lora_r=4"]
    with pytest.raises(ValueError, match="search parameter 'beta': not an argument of TRL's SFT"):
        trl_trainers.search_arguments("sft", environ)


def test_trl_config_settings_become_their_trl_arguments_in_a_trial() -> None:
    environ = {"KUBEFLOW_TRAINER_OPT_LORA_RANK": "4", "KUBEFLOW_TRAINER_OPT_BATCH_SIZE": "2"}
    assert trl_trainers.search_arguments("sft", environ) == [
        "--per_device_train_batch_size=2",
        "--lora_r=4",
    ]


def test_every_method_says_what_it_reports() -> None:
    assert set(trl_search.METRICS) == set(trl_methods.METHODS)


LORA = TRLConfig(peft_config=LoraConfig(lora_rank=8))


@pytest.mark.parametrize(
    ("config", "space", "metric", "expected"),
    [
        pytest.param(
            LORA,
            {"lr": Search.loguniform(1e-5, 1e-2)},
            "loss",
            r"search_space\['lr'\]: not a setting",
            id="unknown-name",
        ),
        pytest.param(
            TRLConfig(),
            {"lora_r": Search.choice([2, 8])},
            "loss",
            r"search_space\['lora_r'\]: a LoRA setting, but the trial template trains no adapter",
            id="lora-without-adapter",
        ),
        pytest.param(
            LORA,
            {"beta": Search.uniform(0.1, 0.5)},
            "loss",
            r"'beta'\]: not a setting of TRL's SFT",
            id="another-methods-argument",
        ),
        pytest.param(
            LORA,
            {"lora_rank": Search.uniform(2, 8)},
            "loss",
            r"'lora_rank'\]: a range gives fractions",
            id="range-over-whole-numbers",
        ),
        pytest.param(
            LORA,
            {"lora_r": Search.choice([2, 2.5])},
            "loss",
            r"choice '2.5' is not of kind int",
            id="choice-of-wrong-kind",
        ),
        pytest.param(
            LORA,
            {"output_path": Search.choice(["/x"])},
            "loss",
            r"set by the runtime",
            id="runtime-path",
        ),
        pytest.param(
            LORA,
            {"lora_r": Search.choice([2]), "lora_rank": Search.choice([4])},
            "loss",
            r"'lora_rank'\]: sets TRL's lora_r, as 'lora_r' does",
            id="two-names-one-setting",
        ),
        pytest.param(
            LORA,
            {"learning_rate": Search.loguniform(1e-5, 1e-2)},
            "eval_loss",
            r"without an eval set",
            id="eval-loss",
        ),
        pytest.param(
            LORA,
            {"learning_rate": Search.loguniform(1e-5, 1e-2)},
            "reward_margin",
            r"objectives\[0\].metric 'reward_margin': the TRL engine's sft reports no such metric",
            id="another-methods-metric",
        ),
        pytest.param(
            TorchTuneConfig(),
            {"learning_rate": Search.loguniform(1e-5, 1e-2)},
            "loss",
            r"a TorchTuneConfig trial does not read search parameters",
            id="torchtune",
        ),
    ],
)
def test_optimize_refuses_a_search_the_engine_cannot_run_before_any_trial(
    tmp_path: Path, config: TRLConfig, space: dict[str, Any], metric: str, expected: str
) -> None:
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    with pytest.raises(ValueError, match=expected):
        client.optimize(
            trial_template=TrainJobTemplate(runtime="trl-cpu", trainer=BuiltinTrainer(config)),
            search_space=space,
            objectives=[Objective(metric=metric)],
        )
    assert client.list_jobs() == []


def test_a_methods_own_parameters_and_metrics_pass_and_reach_the_trial(tmp_path: Path) -> None:
    config = TRLConfig(max_steps=1, method=DPO(beta=0.1), peft_config=LoraConfig(lora_rank=8))
    definition = Definition.requested(
        {"beta": Search.uniform(0.05, 0.5), "lora_rank": Search.choice([2, 4])},
        TrialConfig(num_trials=1),
        [Objective(metric="reward_accuracy", direction="maximize")],
        None,
        None,
    )
    backend = TrainerClient(LocalBackendConfig(root=tmp_path)).backend
    job = requested_job(
        backend,
        "dpo-search",
        TrainJobTemplate(trainer=BuiltinTrainer(config), runtime="trl-cpu"),
        definition,
    )
    assert [p.name for p in job.spec.parameters] == ["beta", "lora_rank"]
    assert "--lora_r=8" in job.to_dict()["spec"]["trainJobTemplate"]["spec"]["trainer"]["args"]


def fine_tune(config: TRLConfig, model: Path, data: Path) -> TrainJobTemplate:
    """A trial template: a TRL fine-tune of ``model`` on ``data``."""
    return TrainJobTemplate(
        runtime="trl-cpu",
        trainer=BuiltinTrainer(config),
        initializer=Initializer(
            model=HuggingFaceModelInitializer(str(model)),
            dataset=HuggingFaceDatasetInitializer(str(data)),
        ),
    )


@pytest.mark.e2e
@pytest.mark.slow
def test_optimizer_searches_a_fine_tunes_learning_rate_and_lora_rank(
    tmp_path: Path, tiny_model: Path, chat_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    config = TRLConfig(max_steps=10, batch_size=4, seed=7, peft_config=LoraConfig(lora_rank=8))
    template = fine_tune(config, tiny_model, chat_file)
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=template,
        trial_config=TrialConfig(num_trials=3, parallel_trials=1),
        search_space={
            "learning_rate": Search.choice([1e-4, 1e-2]),
            "lora_r": Search.choice([2, 8]),
        },
        objectives=[Objective(metric="loss", direction="minimize")],
        algorithm=GridSearch(),
    )
    job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
    assert job.status == "Complete", [t.trainjob.status for t in job.trials]
    assert len(job.trials) == 3
    for trial in job.trials:
        log = "\n".join(client.get_job_logs(name, trial_name=trial.name))
        assert trial.trainjob.status == "Complete", log[-2000:]
    best = client.get_best_results(name)
    assert best is not None
    losses = {
        (float(t.parameters["learning_rate"]), int(t.parameters["lora_r"])): t.objective
        for t in job.trials
    }
    print(f"{name}: final loss by (learning rate, LoRA rank): {losses}")
    assert losses[(1e-4, 2)] != losses[(1e-4, 8)]  # the rank reached TRL
    assert float(best.parameters["learning_rate"]) == 1e-2  # 1e-4 barely moves in 10 steps
    assert best.parameters["lora_r"] == "2"


@pytest.mark.e2e
@pytest.mark.slow
def test_successive_halving_stops_a_fine_tune_that_learns_slower_from_its_step_losses(
    tmp_path: Path, tiny_model: Path, chat_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's per-step loss reaches the pruner: the second trial (a learning rate too
    small to move) trails the first at the first rung and is stopped there, long before its
    last step."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    steps = 200  # after step 4, seconds of training: the stop lands long before the end
    config = TRLConfig(
        max_steps=steps, batch_size=2, seed=7, save_steps=steps, peft_config=LoraConfig(lora_rank=4)
    )
    template = fine_tune(config, tiny_model, chat_file)
    client = OptimizerClient(LocalBackendConfig(root=tmp_path))
    name = client.optimize(
        trial_template=template,
        trial_config=TrialConfig(num_trials=2, parallel_trials=1),
        search_space={"learning_rate": Search.choice([1e-2, 1e-7])},
        objectives=[Objective(metric="loss", direction="minimize")],
        algorithm=GridSearch(),
        early_stopping=SuccessiveHalving(min_resource=4, reduction_factor=2),
    )
    job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
    first, second = sorted(job.trials, key=lambda trial: trial.name)
    log = "\n".join(client.get_job_logs(name, trial_name=second.name))
    assert first.pruned_at_step is None and first.trainjob.status == "Complete"
    assert second.pruned_at_step == 4, (second.objective, log[-2000:])
    assert second.trainjob.status == "Stopped"
    reported = TrainerClient(LocalBackendConfig(root=tmp_path)).get_job_metrics(second.name)
    assert max(point.step for point in reported) < steps  # stopped, not run to the end
    best = client.get_best_results(name)
    assert best is not None and float(best.parameters["learning_rate"]) == 1e-2
