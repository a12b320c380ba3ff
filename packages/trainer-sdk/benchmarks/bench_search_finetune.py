"""Search over a fine-tune's learning rate and LoRA rank: TPE + ASHA against random search,
the same number of trials, seeded, side by side.

Each trial is a real LoRA fine-tune, in this process: the tiny Llama of
``training.engines.tiny_model`` (built from its config, nothing downloaded), PEFT's LoRA on its
attention projections at the trial's rank, AdamW at the trial's learning rate, ``--steps`` steps
on batches of facts (``the color of the sky is blue``); every ``--every`` steps the loss on a
held-out phrasing of the same facts is the trial's report, and its last report the objective.
The search is ``trainer_search``'s core, as the local driver and the operator run it: ``suggest``
for the next trial, ``check_pruning`` after each report (ASHA stops a trial that trails its
rung). A TRL job per trial would spend most of its 15-30 s here starting up, too slow for
enough trials; the in-process fine-tune keeps the search's own decisions and the steps they
cost. Prints, per seed and on average, the training steps each search spent and the best
objective it found.

    python packages/trainer-sdk/benchmarks/bench_search_finetune.py [--trials 24] \\
        [--seeds 0 1 2] [--steps 40] [--every 4]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, get_peft_model  # type: ignore[import-untyped]
from trainer_api import EarlyStopping
from trainer_sdk.training.engines.tiny_model import write_tiny_model
from trainer_search import Choice, Range, Study, TrialRecord, check_pruning, suggest
from transformers import AutoModelForCausalLM, AutoTokenizer

THINGS = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}
TRAIN_PHRASES = ("the color of the {thing} is {color}", "what is the color of the {thing} {color}")
HELD_OUT_PHRASE = "tell me the color of the {thing} it is {color}"
SPACE = {
    "learning_rate": Range(1e-5, 0.3, log=True),
    "lora_r": Choice(("1", "2", "4", "8", "16")),
}


def batch(tokenizer: Any, texts: list[str]) -> dict[str, torch.Tensor]:
    """Token ids and labels (padding ignored by the loss) for ``texts``."""
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
    return {**encoded, "labels": labels}


class FineTune:
    """The tiny model, its data, and one trial's training as a stream of held-out losses."""

    def __init__(self, directory: Path, steps: int, every: int) -> None:
        write_tiny_model(directory, "llama", seed=0)
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        self.base = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
        facts = [{"thing": t, "color": c} for t, c in THINGS.items()]
        self.train_texts = [p.format(**f) for p in TRAIN_PHRASES for f in facts]
        self.held_out = batch(self.tokenizer, [HELD_OUT_PHRASE.format(**f) for f in facts])
        self.steps = steps
        self.every = every

    def losses(self, learning_rate: float, rank: int, seed: int) -> Iterator[tuple[int, float]]:
        """``(step, held-out loss)`` every ``every`` steps while the caller keeps reading."""
        torch.manual_seed(seed)
        model = get_peft_model(
            copy.deepcopy(self.base),
            LoraConfig(r=rank, lora_alpha=16, target_modules=["q_proj", "v_proj", "o_proj"]),
        )
        optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad], lr=learning_rate
        )
        order = torch.Generator().manual_seed(seed)
        for step in range(1, self.steps + 1):
            picked = torch.randint(len(self.train_texts), (8,), generator=order).tolist()
            model.train()
            loss = model(**batch(self.tokenizer, [self.train_texts[i] for i in picked])).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % self.every == 0:
                model.eval()
                with torch.no_grad():
                    held_out = float(model(**self.held_out).loss)
                yield step, held_out if math.isfinite(held_out) else 1e3


def search(
    finetune: FineTune, algorithm: str, rule: EarlyStopping | None, trials: int, seed: int
) -> tuple[int, float]:
    """Run ``trials`` trials one after another; the training steps spent and the best
    objective of a trial that ran to its end."""
    study = Study(space=SPACE, algorithm=algorithm, seed=seed, early_stopping=rule)  # type: ignore[arg-type]
    history: list[TrialRecord] = []
    spent = 0
    for number in range(trials):
        [found] = suggest(study, history, 1)
        record = TrialRecord(number, found.parameters, engine_state=found.engine_state)
        rate, rank = float(found.parameters["learning_rate"]), int(found.parameters["lora_r"])
        for step, loss in finetune.losses(rate, rank, seed * 1000 + number):
            record = dataclasses.replace(record, steps={**record.steps, step: loss})
            spent += finetune.every
            decision = check_pruning(study, [*history, record], number)
            record = dataclasses.replace(
                record, checked_step=decision.checked_step, engine_state=decision.engine_state
            )
            if decision.prune:
                record = dataclasses.replace(record, state="pruned", objective=loss)
                break
        else:
            record = dataclasses.replace(record, state="complete", objective=loss)
        history.append(record)
    best = min(r.objective for r in history if r.state == "complete" and r.objective is not None)
    return spent, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--every", type=int, default=4)
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    asha = EarlyStopping(rule="asha", min_resource=arguments.every, reduction_factor=3)
    searches: dict[str, Callable[[FineTune, int], tuple[int, float]]] = {
        "random": lambda f, seed: search(f, "random", None, arguments.trials, seed),
        "TPE + ASHA": lambda f, seed: search(f, "tpe", asha, arguments.trials, seed),
    }
    with tempfile.TemporaryDirectory() as directory:
        finetune = FineTune(Path(directory), arguments.steps, arguments.every)
        results = {
            (label, seed): run(finetune, seed)
            for seed in arguments.seeds
            for label, run in searches.items()
        }
    print(
        f"{arguments.trials} trials per search, {arguments.steps} steps each, held-out loss every "
        f"{arguments.every} steps; ASHA min_resource {arguments.every}, reduction factor 3"
    )
    print(
        f"{'seed':<6}{'random steps':>14}{'best loss':>11}{'TPE+ASHA steps':>16}"
        f"{'best loss':>11}{'fewer steps':>13}"
    )
    for seed in arguments.seeds:
        (r_steps, r_best), (t_steps, t_best) = results["random", seed], results["TPE + ASHA", seed]
        print(
            f"{seed:<6}{r_steps:>14d}{r_best:>11.4f}{t_steps:>16d}{t_best:>11.4f}"
            f"{1 - t_steps / r_steps:>13.0%}"
        )
    mean = {
        label: (
            statistics.mean(results[label, s][0] for s in arguments.seeds),
            statistics.mean(results[label, s][1] for s in arguments.seeds),
        )
        for label in searches
    }
    (r_steps_mean, r_best_mean), (t_steps_mean, t_best_mean) = mean["random"], mean["TPE + ASHA"]
    print(
        f"{'mean':<6}{r_steps_mean:>14.0f}{r_best_mean:>11.4f}{t_steps_mean:>16.0f}"
        f"{t_best_mean:>11.4f}{1 - t_steps_mean / r_steps_mean:>13.0%}"
    )


if __name__ == "__main__":
    main()
