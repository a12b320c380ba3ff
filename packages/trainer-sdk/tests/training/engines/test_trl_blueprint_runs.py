"""Every blueprint beyond SFT (DPO full, KTO, ORPO, GRPO with LoRA, distillation) as a platform run:
on two local nodes (real torchrun and gloo; GRPO and distillation generate on both ranks), rank
0 killed with SIGKILL right after committing checkpoint 2 of 4, the JobSet restarts it, and the
engine resumes from that checkpoint: the steps after it run once each, and the last step logs
what an uninterrupted run logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainer_sdk import (
    DPO,
    GRPO,
    KTO,
    ORPO,
    Distillation,
    HuggingFaceModelInitializer,
    LengthReward,
    LoraConfig,
    PreferenceDataset,
    PromptDataset,
    RegexReward,
    TrainerClient,
    TRLConfig,
)

from .conftest import COLORS, completed, faulty_runtime, start_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 4
CHECKPOINT = 2
TIMING = {"tokens_per_second"}  # a step's only value that depends on the clock


@pytest.fixture(scope="module")
def records_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Prompts with a chosen and a rejected answer: the preference methods' pairs, the other
    methods' prompts."""
    path = tmp_path_factory.mktemp("blueprints") / "records.jsonl"
    records = [
        {"prompt": f"what is the color of the {thing}", "chosen": color, "rejected": "a car"}
        for thing, color in sorted(COLORS.items())
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records * 4))
    return path


def _config(method: str, teacher: Path) -> TRLConfig:
    """A 4-step, 2-node job of ``method``, checkpointing every 2 steps (GRPO with LoRA)."""
    settings = {
        "dpo": (DPO(beta=0.1), PreferenceDataset()),
        "kto": (KTO(beta=0.1), PreferenceDataset()),
        "orpo": (ORPO(beta=0.1), PreferenceDataset()),
        "grpo": (
            GRPO(
                rewards=[LengthReward(target=4), RegexReward("[a-z ]+", weight=0.5)],
                num_generations=4,
                max_new_tokens=4,
            ),
            PromptDataset(),
        ),
        "distillation": (
            Distillation(teacher=HuggingFaceModelInitializer(str(teacher)), max_new_tokens=4),
            PromptDataset(),
        ),
    }
    blueprint, dataset = settings[method]
    return TRLConfig(
        method=blueprint,
        # GRPO trains a LoRA adapter: a resume that loads an adapter, not the whole model.
        peft_config=LoraConfig(lora_rank=8, lora_alpha=16) if method == "grpo" else None,
        num_nodes=2,
        max_steps=STEPS,
        batch_size=2,
        learning_rate=1e-3,
        seed=7,
        save_steps=CHECKPOINT,
        dataset_preprocess_config=dataset,
    )


@pytest.mark.parametrize("method", ["dpo", "kto", "orpo", "grpo", "distillation"])
def test_a_blueprint_killed_on_two_nodes_resumes_to_the_uninterrupted_last_step(
    client: TrainerClient, tiny_model: Path, teacher: Path, records_file: Path, method: str
) -> None:
    """The uninterrupted and the killed run go side by side (the machine's cores, not the
    runs' order, bound them)."""
    config = _config(method, teacher)
    faults = {"steady": None, "killed": f"--kill-at={CHECKPOINT}"}
    names = {}
    for case, fault in faults.items():
        client.apply_runtime(faulty_runtime(f"trl-{method}-{case}", fault))
        names[case] = start_job(client, config, tiny_model, records_file, f"trl-{method}-{case}")
    last: dict[str, dict[str, float]] = {}
    for case, fault in faults.items():
        job = completed(client, names[case])
        log = "\n".join(client.get_job_logs(names[case], step="node-0"))
        resumed = f"checkpoints/checkpoint-{CHECKPOINT}" in log.partition("resuming from ")[2]
        assert resumed == (fault is not None), log[-3000:]
        assert (job.message == "1 restart") == (fault is not None)
        points = [p for p in client.get_job_metrics(names[case]) if "loss" in p.values]
        first = CHECKPOINT + 1 if fault else 1  # a restarted job's metrics are its last attempt's
        assert [p.step for p in points] == list(range(first, STEPS + 1))  # none repeated or lost
        last[case] = {k: v for k, v in points[-1].values.items() if k not in TIMING}
        assert job.output is not None
        checkpoint = Path(job.output) / "checkpoints" / f"checkpoint-{STEPS}"
        assert (checkpoint / "COMMITTED").is_file()
        lora = (checkpoint / "adapter_model.safetensors").is_file()
        assert lora == (method == "grpo"), sorted(path.name for path in checkpoint.iterdir())
    print(f"{method}: last step, uninterrupted {last['steady']}; resumed {last['killed']}")
    # Bit for bit: the checkpoint holds the weights, optimizer, scheduler and every rank's RNG
    # state, and gloo sums in a fixed order.
    assert last["killed"] == last["steady"]
