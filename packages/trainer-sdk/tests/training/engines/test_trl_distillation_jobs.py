"""Knowledge distillation through the platform (local backend, two nodes, real TRL on tiny
models): the teacher comes from a model initializer, the student writes completions to the
prompts and learns the teacher's next-token distribution; its KL divergence from the teacher on
held-out text falls by at least half."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from trainer_sdk import (
    Distillation,
    HuggingFaceModelInitializer,
    PromptDataset,
    TrainerClient,
    TRLConfig,
)
from transformers import AutoModelForCausalLM, AutoTokenizer

from .conftest import COLORS, heldout_texts, run_to_completion

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 20


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prompts") / "questions.jsonl"
    records = [{"prompt": f"what is the color of the {thing}"} for thing in sorted(COLORS)] * 8
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def kl_to_teacher(student: Path, teacher: Path) -> float:
    """KL(teacher || student) of the next-token distributions, in float64, averaged over every
    position of held-out conversations (a question never in training, and its answers)."""
    tokenizer = AutoTokenizer.from_pretrained(teacher)
    batch = tokenizer(heldout_texts(tokenizer), return_tensors="pt", padding=True)
    mask = batch["attention_mask"].bool()
    log_probs = []
    for directory in (teacher, student):
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float64).eval()
        with torch.no_grad():
            log_probs.append(torch.log_softmax(model(**batch).logits, dim=-1))
    teacher_log, student_log = log_probs
    per_position = (teacher_log.exp() * (teacher_log - student_log)).sum(-1)
    return float(per_position[mask].mean())


def test_the_student_learns_the_teachers_distribution(
    client: TrainerClient, tiny_model: Path, teacher: Path, prompts_file: Path
) -> None:
    config = TRLConfig(
        method=Distillation(
            teacher=HuggingFaceModelInitializer(str(teacher)), max_new_tokens=8, temperature=1.0
        ),
        num_nodes=2,  # the main rank fetches the teacher, the other waits for it
        max_steps=STEPS,
        batch_size=4,
        learning_rate=3e-2,
        seed=7,
        dataset_preprocess_config=PromptDataset(),
    )
    name, job = run_to_completion(client, config, tiny_model, prompts_file)
    log = "\n".join(client.get_job_logs(name, step="node-0"))
    assert f"teacher model fetched from {teacher.as_uri()}" in log

    losses = [p.values["loss"] for p in client.get_job_metrics(name) if "loss" in p.values]
    assert len(losses) == STEPS
    assert job.output is not None
    before = kl_to_teacher(tiny_model, teacher)
    after = kl_to_teacher(Path(job.output) / "model", teacher)
    print(
        f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}; held-out KL {before:.3f} -> {after:.3f}"
    )
    assert after <= before / 2, (before, after)
