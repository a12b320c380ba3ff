"""GRPO through the platform (local backend, real TRL on a tiny model): a reward function given
as a Python function (sent as its source) and built-ins, combined with weights, on a format
task (short answers in plain lower-case words); the mean reward the job logs rises by at least
half of its headroom within 20 steps, and the written model, loaded, writes plainer answers
than the base model."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import torch
from trainer_sdk import (
    GRPO,
    FunctionReward,
    LengthReward,
    PromptDataset,
    RegexReward,
    TrainerClient,
    TRLConfig,
)
from transformers import AutoModelForCausalLM, AutoTokenizer

from .conftest import COLORS, run_to_completion

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 20


def plain_letters(prompts: list[str], completions: list[str], **_: list[object]) -> list[float]:
    """The share of a completion's characters that are lower-case letters or spaces (sent to
    the pod as its source)."""
    return [
        sum(char.islower() or char == " " for char in text) / max(len(text), 1)
        for text in completions
    ]


def sampled_plainness(directory: Path, samples: int = 8) -> float:
    """The mean ``plain_letters`` of answers the model in ``directory`` samples (as the job
    did: chat template, at most 6 new tokens, temperature 1.0, fixed seed) to each question."""
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    questions = [f"what is the color of the {thing}" for thing in sorted(COLORS)]
    torch.manual_seed(0)
    scores = []
    for question in questions:
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": question}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )["input_ids"]
        with torch.no_grad():
            written = model.generate(
                ids.repeat(samples, 1),
                do_sample=True,
                temperature=1.0,
                max_new_tokens=6,
                pad_token_id=tokenizer.pad_token_id,
            )
        answers = tokenizer.batch_decode(written[:, ids.shape[1] :], skip_special_tokens=True)
        scores += plain_letters([question] * samples, answers)
    return statistics.mean(scores)


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prompts") / "questions.jsonl"
    records = [
        {"question": f"what is the color of the {thing}", "answer": color}
        for thing, color in sorted(COLORS.items())
        for _ in range(8)
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_grpo_raises_the_mean_reward_of_python_and_built_in_rewards(
    client: TrainerClient, tiny_model: Path, prompts_file: Path
) -> None:
    method = GRPO(
        rewards=[
            FunctionReward(plain_letters, weight=1.0),
            LengthReward(target=6, weight=0.5),
            RegexReward("[a-z ]+", weight=0.5),
        ],
        num_generations=8,
        max_new_tokens=6,
        temperature=1.0,
    )
    config = TRLConfig(
        method=method,
        max_steps=STEPS,
        batch_size=16,
        learning_rate=3e-2,
        seed=7,
        dataset_preprocess_config=PromptDataset(column_map={"prompt": "question"}),
    )
    name, job = run_to_completion(client, config, tiny_model, prompts_file)

    points = [p for p in client.get_job_metrics(name) if "loss" in p.values]
    assert [p.step for p in points] == list(range(1, STEPS + 1))
    rewards = [p.values["reward"] for p in points]
    best = 1.0 + 0.5 + 0.5  # every reward at its maximum
    first, last = statistics.mean(rewards[:5]), statistics.mean(rewards[-5:])
    print(f"{name}: mean reward, first 5 steps {first:.2f}, last 5 {last:.2f}, at most {best}")
    assert last - first >= 0.5 * (best - first), rewards
    # Each function's own mean every step, as the platform names TRL's rewards/<name>/mean.
    assert all(
        {"reward_plain_letters", "reward_length", "reward_regex"} <= set(p.values) for p in points
    )
    plain = [p.values["reward_plain_letters"] for p in points]
    assert statistics.mean(plain[-5:]) > statistics.mean(plain[:5]) + 0.1, plain

    assert job.output is not None
    base, trained = sampled_plainness(tiny_model), sampled_plainness(Path(job.output) / "model")
    print(f"{name}: plain letters in sampled answers, base model {base:.2f}, trained {trained:.2f}")
    assert trained > base + 0.1, (base, trained)
