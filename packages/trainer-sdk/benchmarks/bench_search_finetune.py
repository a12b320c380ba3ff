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
objective it found; ``--split`` adds TPE alone and random search with ASHA, to tell the
sampler's saving from the pruning's.

    python packages/trainer-sdk/benchmarks/bench_search_finetune.py [--trials 40] \\
        [--seeds 0 1 2] [--steps 48] [--every 4] [--min-resource 4] [--reduction-factor 2] \\
        [--split]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, get_peft_model
from trainer_api import EarlyStopping
from trainer_sdk.training.engines.tiny_model import write_tiny_model
from trainer_search import Choice, Range, Study, TrialRecord, check_pruning, suggest
from transformers import AutoModelForCausalLM, AutoTokenizer

THINGS = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}
PHRASES = (
    "the color of the {thing} is {color}",
    "what is the color of the {thing} {color}",
    "tell me the color of the {thing} it is {color}",
)
TEXTS = [phrase.format(thing=t, color=c) for phrase in PHRASES for t, c in THINGS.items()]
HELD_OUT = TEXTS[::6]
"""One fact per phrasing, never trained on: the others teach the phrasings and the facts."""
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
        self.train_texts = [text for text in TEXTS if text not in HELD_OUT]
        self.held_out = batch(self.tokenizer, HELD_OUT)
        self.steps = steps
        self.every = every

    def losses(self, learning_rate: float, rank: int, seed: int) -> Iterator[tuple[int, float]]:
        """``(step, held-out loss)`` every ``every`` steps while the caller keeps reading."""
        torch.manual_seed(seed)
        model = get_peft_model(
            copy.deepcopy(self.base),
            LoraConfig(
                r=rank,
                lora_alpha=16,
                target_modules=["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            ),
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
) -> list[tuple[int, float]]:
    """Run ``trials`` trials one after another; after each trial that ran to its end, and once
    more at the end (pruned trials' steps included), the training steps spent so far and the
    best objective so far."""
    study = Study(space=SPACE, algorithm=algorithm, seed=seed, early_stopping=rule)  # type: ignore[arg-type]
    history: list[TrialRecord] = []
    spent, best = 0, math.inf
    progress = []
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
            best = min(best, loss)
            progress.append((spent, best))
        history.append(record)
    return [*progress, (spent, best)]


def steps_to(progress: list[tuple[int, float]], target: float) -> int | None:
    """The steps a search had spent when its best objective first reached ``target``."""
    return next((spent for spent, best in progress if best <= target), None)


@dataclasses.dataclass(frozen=True)
class Compared:
    """Both searches' steps and best objective, and the steps each spent until its best reached
    random search's final best (None: TPE + ASHA never did)."""

    random_steps: float
    random_best: float
    tuned_steps: float
    tuned_best: float
    random_to_target: float
    tuned_to_target: float | None

    @classmethod
    def of(cls, random: list[tuple[int, float]], tuned: list[tuple[int, float]]) -> Compared:
        target = random[-1][1]
        random_to = steps_to(random, target)
        assert random_to is not None  # its own best
        return cls(*random[-1], *tuned[-1], random_to, steps_to(tuned, target))

    @classmethod
    def mean(cls, rows: list[Compared]) -> Compared:
        reached = [row.tuned_to_target for row in rows if row.tuned_to_target is not None]

        def average(name: str) -> float:
            return statistics.mean(float(getattr(row, name)) for row in rows)

        return cls(
            average("random_steps"),
            average("random_best"),
            average("tuned_steps"),
            average("tuned_best"),
            average("random_to_target"),
            statistics.mean(reached) if len(reached) == len(rows) else None,
        )

    def line(self, label: str) -> str:
        """The row of the printed table."""
        fewer = 1 - self.tuned_steps / self.random_steps
        to_target = (
            f"{self.tuned_to_target:>12.0f}{1 - self.tuned_to_target / self.random_to_target:>7.0%}"
            if self.tuned_to_target is not None
            else f"{'never':>12}"
        )
        return (
            f"{label:<5}{self.random_steps:>14.0f}{self.random_best:>8.4f}"
            f"{self.tuned_steps:>19.0f}{self.tuned_best:>8.4f}{fewer:>7.0%} | "
            f"{self.random_to_target:>23.0f}{to_target}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--min-resource", type=int, default=4)
    parser.add_argument("--reduction-factor", type=int, default=2)
    parser.add_argument(
        "--split", action="store_true", help="also TPE alone and random search with ASHA"
    )
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    asha = EarlyStopping(
        rule="asha",
        min_resource=arguments.min_resource,
        reduction_factor=arguments.reduction_factor,
    )
    searches: dict[str, tuple[str, EarlyStopping | None]] = {"TPE+ASHA": ("tpe", asha)}
    if arguments.split:
        searches |= {"TPE alone": ("tpe", None), "random+ASHA": ("random", asha)}
    rows: dict[str, list[Compared]] = {label: [] for label in searches}
    with tempfile.TemporaryDirectory() as directory:
        finetune = FineTune(Path(directory), arguments.steps, arguments.every)
        for seed in arguments.seeds:
            random = search(finetune, "random", None, arguments.trials, seed)
            for label, (algorithm, rule) in searches.items():
                found = search(finetune, algorithm, rule, arguments.trials, seed)
                rows[label].append(Compared.of(random, found))
    print(
        f"{arguments.trials} trials per search, {arguments.steps} steps each, held-out loss every "
        f"{arguments.every} steps; ASHA min_resource {arguments.min_resource}, "
        f"reduction factor {arguments.reduction_factor}"
    )
    for label, compared in rows.items():
        print(
            f"{'seed':<5}{'random: steps':>14}{'best':>8}{label + ': steps':>19}{'best':>8}"
            f"{'fewer':>7} | {'to random best: random':>23}{label:>12}{'fewer':>7}"
        )
        for seed, row in zip(arguments.seeds, compared, strict=True):
            print(row.line(str(seed)))
        print(Compared.mean(compared).line("mean"))


if __name__ == "__main__":
    main()
