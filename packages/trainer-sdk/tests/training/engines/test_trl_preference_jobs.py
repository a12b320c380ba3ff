"""Preference tuning through the platform (local backend, real TRL on a tiny model): DPO full
and LoRA (on two nodes), with and without a reference model, KTO and ORPO, from a JSONL file of
chosen/rejected pairs (a thing's colour over another colour). On held-out pairs (colours never
paired in training) the base model prefers the chosen answer about half of the time; the
written model gives it the higher probability on at least 90 % of them, and its implicit reward
(its log-ratio to the base model) favours it too; the reward margin rises and each step reports
the preference metrics."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_sdk import (
    DPO,
    KTO,
    ORPO,
    LoraConfig,
    PreferenceDataset,
    TrainerClient,
    TRLConfig,
)
from transformers import AutoModelForCausalLM, AutoTokenizer

from .conftest import COLORS, run_to_completion

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 40
# Adapters on the MLP too: on attention only, the tiny model learns the colours too slowly.
LORA = LoraConfig(lora_rank=8, lora_alpha=16, apply_lora_to_mlp=True)
# The things whose colour is one word of two tokens (" yellow" takes three), so that chosen and
# rejected answers have the same length and template.
ANSWERS = {thing: color for thing, color in sorted(COLORS.items()) if thing != "sun"}
# Questions that end alike ("... color of the sky"), so that what is learnt from some carries
# to the others.
PHRASINGS = (
    "what is the color of the",
    "tell me the color of the",
    "the color of the",
    "you tell me the color of the",
    "is it the color of the",
    "what is the color of a",
)


def _pairs(held_out: bool) -> list[dict[str, str]]:
    """The preference to learn: a thing's own colour over another colour, asked in several
    phrasings. With the things in a ring, training pairs each colour against its two
    neighbours' and holds out the pairs against the opposite one's ("sky": "blue" over
    "green", and "grass": "green" over "blue"), never seen together. Every colour is as often
    chosen as rejected, so a model that does not know the colours prefers the chosen answer on
    about half of the pairs."""
    things = list(ANSWERS)
    return [
        {
            "prompt": f"{phrasing} {thing}",
            "chosen": ANSWERS[thing],
            "rejected": ANSWERS[things[(index + offset) % len(things)]],
        }
        for phrasing in PHRASINGS
        for index, thing in enumerate(things)
        for offset in range(1, len(things))
        if (offset == len(things) // 2) == held_out
    ]


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The training pairs, with the column names of another data set (``better``...)."""
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    records = [
        {"question": p["prompt"], "better": p["chosen"], "worse": p["rejected"]}
        for p in _pairs(held_out=False)
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _answer_log_probability(model: Any, tokenizer: Any, prompt: str, answer: str) -> float:
    """log p(answer | prompt) under the chat template, in float64: of every token from the
    first that differs from the prompt's own (the prompt's trailing space merges into the
    answer's first token)."""
    context = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
    )
    ids = tokenizer(context + answer, return_tensors="pt", add_special_tokens=False)["input_ids"]
    prompt_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    pairs = zip(ids[0].tolist(), prompt_ids, strict=False)
    start = next(i for i, (token, prompt_token) in enumerate(pairs) if token != prompt_token)
    with torch.no_grad():
        logits = model(ids).logits.double()
    log_probs = torch.log_softmax(logits[0, :-1], dim=-1)
    targets = ids[0, 1:]
    return float(log_probs[start - 1 :].gather(1, targets[start - 1 :, None]).sum())


def _margins(directory: Path, pairs: list[dict[str, str]]) -> list[float]:
    """log p(chosen) - log p(rejected) under the model in ``directory``, for each pair."""
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    return [
        _answer_log_probability(model, tokenizer, p["prompt"], p["chosen"])
        - _answer_log_probability(model, tokenizer, p["prompt"], p["rejected"])
        for p in pairs
    ]


def preference_accuracies(
    policy: Path, reference: Path, pairs: list[dict[str, str]]
) -> tuple[float, float, float, float]:
    """Over ``pairs``: the share where the policy's implicit reward (its log-ratio to the
    reference, as DPO defines it) is higher for the chosen answer; the share where the
    reference, and the policy, give the chosen answer the higher probability; the policy's
    smallest log-probability margin of chosen over rejected."""
    trained, base = _margins(policy, pairs), _margins(reference, pairs)
    implicit = sum(t > b for t, b in zip(trained, base, strict=True)) / len(pairs)
    before, after = (sum(margin > 0 for margin in m) / len(pairs) for m in (base, trained))
    return implicit, before, after, min(trained)


@pytest.mark.parametrize(
    ("method", "lora", "nodes"),
    [
        pytest.param(DPO(beta=0.1), False, 1, id="dpo-full-reference"),
        pytest.param(DPO(beta=0.1, reference_model=False), False, 1, id="dpo-full-precomputed"),
        pytest.param(DPO(beta=0.1), True, 2, id="dpo-lora-reference-2-nodes"),
        pytest.param(KTO(beta=0.1), False, 1, id="kto-full"),
        pytest.param(ORPO(beta=0.1), False, 1, id="orpo-full"),
    ],
)
def test_preference_tuning_makes_the_model_prefer_the_chosen_answers(
    client: TrainerClient,
    tiny_model: Path,
    pairs_file: Path,
    method: DPO | KTO | ORPO,
    lora: bool,
    nodes: int,
) -> None:
    config = TRLConfig(
        method=method,
        num_nodes=nodes,
        max_steps=STEPS,
        batch_size=8 // nodes,
        learning_rate=1e-2,
        seed=7,
        peft_config=LORA if lora else None,
        dataset_preprocess_config=PreferenceDataset(
            column_map={"prompt": "question", "chosen": "better", "rejected": "worse"}
        ),
    )
    name, job = run_to_completion(client, config, tiny_model, pairs_file)

    points = [p for p in client.get_job_metrics(name) if "loss" in p.values]
    assert [p.step for p in points] == list(range(1, STEPS + 1))
    # KTO reports the chosen and rejected rewards of the steps whose batch held both kinds.
    expected = (
        {"reward_margin", "reward_chosen", "reward_rejected", "reward_accuracy"}
        if isinstance(method, (DPO, ORPO))
        else {"kl"}
    )
    assert all(expected <= set(p.values) for p in points), points[-1].values

    assert job.output is not None
    implicit, before, after, weakest = preference_accuracies(
        Path(job.output) / "model", tiny_model, _pairs(held_out=True)
    )
    margins = [p.values["reward_margin"] for p in points if "reward_margin" in p.values]
    assert len(margins) >= STEPS // 2, [sorted(p.values) for p in points[:3]]
    print(
        f"{name}: reward margin {margins[0]:.2f} -> {margins[-1]:.2f}; held-out pairs "
        f"preferred: implicit reward {implicit:.2f}, probability {before:.2f} -> {after:.2f} "
        f"(smallest margin {weakest:.2f} nats)"
    )
    assert statistics.mean(margins[-5:]) > statistics.mean(margins[:5]) + 0.1, margins
    assert implicit >= 0.9 and 0.3 <= before <= 0.7 and after >= 0.9, (implicit, before, after)
