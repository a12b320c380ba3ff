"""GRPO through the platform (local backend, real TRL on a tiny model): a reward function given
as a Python function (sent as its source) and built-ins, combined with weights, on a format
task (short answers in plain lower-case words); the mean reward the job logs rises by at least
half of its headroom within 20 steps."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from trainer_sdk import (
    GRPO,
    FunctionReward,
    LengthReward,
    PromptDataset,
    RegexReward,
    TrainerClient,
    TRLConfig,
)

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
    name, _ = run_to_completion(client, config, tiny_model, prompts_file)

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
