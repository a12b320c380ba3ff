"""GRPO's rewards: each becomes a JSON spec at submit and, in the pod, a function of the
completions' text and the data set's columns; bad rewards refused naming their field."""

from __future__ import annotations

import json

import pytest
from trainer_sdk import (
    GRPO,
    ExactMatchReward,
    FunctionReward,
    InvalidTrainJobError,
    LengthReward,
    PromptDataset,
    RegexReward,
    TRLConfig,
)
from trainer_sdk.training.engines.rewards import reward_functions, reward_spec
from trainer_sdk.training.engines.trl import ENGINE


def answer_words(prompts: list[str], completions: list[str], answer: list[str]) -> list[float]:
    """Uses a column and a module it imports itself."""
    import math

    return [
        math.fsum(word == a for word in c.split()) for c, a in zip(completions, answer, strict=True)
    ]


def _pod(*rewards: object) -> list[object]:
    specs = [reward_spec(reward, "r")[0] for reward in rewards]
    return reward_functions(json.dumps(specs), ["prompt", "answer"])  # type: ignore[return-value]


def test_each_reward_scores_the_completions_text() -> None:
    exact, regex, length, function = _pod(
        ExactMatchReward(),
        RegexReward(r"the \w+"),
        LengthReward(target=4),
        FunctionReward(answer_words),
    )
    # TRL gives conversations (a list of messages) and its own extras; rewards see text.
    completions = [
        [{"role": "assistant", "content": c}] for c in (" blue ", "the blue", "blue blue")
    ]
    given = {
        "prompts": [[{"role": "user", "content": "sky?"}]] * 3,
        "completions": completions,
        "answer": ["blue"] * 3,
        "completion_ids": [[1]] * 3,
        "trainer_state": None,
    }
    assert exact(**given) == [1.0, 0.0, 0.0]  # type: ignore[operator]
    assert regex(**given) == [0.0, 1.0, 0.0]  # type: ignore[operator]
    assert length(**given) == [1.0, 0.0, 0.0]  # type: ignore[operator]  # 4, 8, 9
    assert function(**given) == [1.0, 1.0, 2.0]  # type: ignore[operator]
    assert [f.__name__ for f in (exact, regex, length, function)] == [  # type: ignore[attr-defined]
        "exact_match",
        "regex",
        "length",
        "answer_words",
    ]


def test_an_exact_match_on_a_missing_column_names_the_columns() -> None:
    (exact,) = _pod(ExactMatchReward(column="solution"))
    with pytest.raises(KeyError, match="no column 'solution'"):
        exact(prompts=["p"], completions=["c"], answer=["a"])  # type: ignore[operator]


def test_grpo_becomes_trls_arguments_with_the_rewards_and_their_weights() -> None:
    config = TRLConfig(
        method=GRPO(
            rewards=[LengthReward(target=6, weight=0.5), RegexReward("[a-z]+")],
            num_generations=8,
            max_new_tokens=16,
            temperature=0.7,
            beta=0.0,
        ),
        dataset_preprocess_config=PromptDataset(column_map={"prompt": "question"}),
    )
    specs = [{"kind": "length", "target": 6}, {"kind": "regex", "pattern": "[a-z]+"}]
    assert ENGINE.trainer(config, None).args == [
        "--method=grpo",
        f"--reward_functions={json.dumps(specs)}",
        "--reward_weights",
        "0.5",
        "1.0",
        "--num_generations=8",
        "--max_completion_length=16",
        "--temperature=0.7",
        "--beta=0.0",
        "--dataset_format=prompt",
        '--column_map={"prompt": "question"}',
    ]


def test_every_bad_reward_and_generation_setting_is_refused_naming_its_field() -> None:
    config = TRLConfig(
        method=GRPO(
            rewards=[
                RegexReward("(unclosed"),
                LengthReward(target=0),
                ExactMatchReward(column=""),
                FunctionReward(len, weight=float("nan")),  # type: ignore[arg-type]
                "exact",  # type: ignore[list-item]
            ],
            num_generations=1,
            max_new_tokens=0,
            temperature=-1.0,
            beta=-0.1,
        )
    )
    with pytest.raises(InvalidTrainJobError) as raised:
        ENGINE.trainer(config, None)
    fields = {error.field: error.message for error in raised.value.errors}
    where = "TRLConfig.method"
    assert sorted(fields) == sorted(
        [
            f"{where}.rewards[0].pattern",
            f"{where}.rewards[1].target",
            f"{where}.rewards[2].column",
            f"{where}.rewards[3].func",
            f"{where}.rewards[3].weight",
            f"{where}.rewards[4]",
            f"{where}.num_generations",
            f"{where}.max_new_tokens",
            f"{where}.temperature",
            f"{where}.beta",
        ]
    )
    assert "cannot read the source of <built-in function len>" in fields[f"{where}.rewards[3].func"]
    assert fields[f"{where}.num_generations"] == "expected a whole number of at least 2, got 1"
    assert fields[f"{where}.rewards[4]"].startswith("expected one of ExactMatchReward, RegexReward")
