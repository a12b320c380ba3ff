"""The platform's overhead on a torchtune fine-tune: upstream's ``BuiltinTrainer(TorchTuneConfig)``
call through TrainerClient (local backend: initializers, supervisor, the ``tune`` shim, the SDK's
recipe) against ``tune run`` directly, the same tiny 20-step LoRA fine-tune, alternated in one run.

Rows, per rank count (the platform's nodes of one process each; ``tune run --nproc_per_node`` on
the direct side): ``tune run`` of the SDK's recipe (the engine the platform runs, without the
platform) and, for one rank, torchtune's own ``lora_finetune_single_device`` recipe (its
distributed recipes do not run on a CPU). Per side, the median over ``--repeats`` runs of the wall
time (from the call that starts it until the model is written) and of the tokens/s each step
reports; the ratio is platform / direct (the SDK's recipe) wall time, target <= 1.10. Every side
runs one thread per rank, the same tiny Llama 3.2 (``tiny_model``), data and settings.

    python packages/trainer-sdk/benchmarks/bench_torchtune.py [--repeats 3] [--steps 20]
        [--python .venv-torchtune/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from builtin_jobs import run_builtin_job
from trainer_sdk import (
    DataFormat,
    DataType,
    LocalBackendConfig,
    LoraConfig,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TrainerClient,
)

ROOT = Path(__file__).resolve().parents[3]
TARGET = 1.10
RECIPE = "trainer_sdk/training/engines/torchtune/recipe.py"
SETTINGS = {"batch_size": 2, "learning_rate": 3e-3, "lora_rank": 8, "lora_alpha": 16}
COLUMNS = {"input": "question", "output": "answer"}
# What the platform renders for those settings, given to `tune run` by hand.
OVERRIDES = [
    "device=cpu",
    "dtype=fp32",
    f"batch_size={SETTINGS['batch_size']}",
    f"optimizer.lr={SETTINGS['learning_rate']}",
    f"model.lora_rank={SETTINGS['lora_rank']}",
    f"model.lora_alpha={SETTINGS['lora_alpha']}",
    "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
    "gradient_accumulation_steps=1",
    "lr_scheduler.num_warmup_steps=2",
    "dataset._component_=torchtune.datasets.instruct_dataset",
    "dataset.source=json",
    "dataset.split=train",
    f"dataset.column_map={json.dumps(COLUMNS)}",
    "metric_logger._component_=torchtune.training.metric_logging.StdoutLogger",
]
_SPEED = re.compile(r"tokens_per_second\w*:([\d.]+)")


def write_data(path: Path) -> Path:
    """64 records of repeating the words asked for."""
    words = ["red", "green", "blue", "cat", "dog", "bird", "runs", "jumps", "sleeps"]
    chooser = random.Random(0)
    with path.open("w") as stream:
        for _ in range(64):
            pair = " ".join(chooser.sample(words, 2))
            stream.write(json.dumps({"question": f"Repeat twice: {pair}", "answer": pair}) + "\n")
    return path


def tiny_model_overrides(model: Path) -> list[str]:
    """What torchtune's own recipes need to build and tokenize the tiny model: its dimensions
    and special tokens (their configs name the 1B model's)."""
    config = json.loads((model / "config.json").read_text())
    return [
        "model._component_=torchtune.models.llama3_2.lora_llama3_2",
        f"model.vocab_size={config['vocab_size']}",
        f"model.num_layers={config['num_hidden_layers']}",
        f"model.num_heads={config['num_attention_heads']}",
        f"model.num_kv_heads={config['num_key_value_heads']}",
        f"model.embed_dim={config['hidden_size']}",
        f"model.intermediate_dim={config['intermediate_size']}",
        f"model.max_seq_len={config['max_position_embeddings']}",
        f"model.scale_factor={int(config['rope_scaling']['factor'])}",
        f"tokenizer.special_tokens_path={model / 'tokenizer.json'}",
    ]


def tune_run(
    python: str, recipe: str, ranks: int, model: Path, data: Path, steps: int, work: Path
) -> tuple[float, float]:
    """``tune run RECIPE`` on torchtune's LoRA config: wall seconds, median step tokens/s."""
    output = Path(tempfile.mkdtemp(dir=work, prefix="direct-"))
    launcher = ["--nnodes", "1", "--nproc_per_node", str(ranks)] if ranks > 1 else []
    stock = recipe == "lora_finetune_single_device"
    config = "llama3_2/1B_lora_single_device" if stock else "llama3_2/1B_lora"
    limits = [f"max_steps={steps}"]
    if stock:  # torchtune's recipe builds the model its config names: the tiny one by hand
        limits = [f"max_steps_per_epoch={steps}", "epochs=1", *tiny_model_overrides(model)]
    command = [python, "-m", "torchtune._cli.tune", "run", *launcher, recipe, "--config", config]
    command += [f"checkpointer.checkpoint_dir={model}", f"output_dir={output}"]
    command += [f"tokenizer.path={model}/original/tokenizer.model", f"dataset.data_files={data}"]
    command += [*OVERRIDES, *limits, "log_peak_memory_stats=false"]
    started = time.monotonic()
    ran = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - started
    if ran.returncode != 0:
        raise RuntimeError(f"{recipe} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}")
    speeds = [float(value) for value in _SPEED.findall(ran.stdout + ran.stderr)]
    per_rank = stock  # torchtune's recipes report tokens/s per GPU, the SDK's for the job
    return wall, statistics.median(speeds) * (ranks if per_rank else 1)


def platform(
    client: TrainerClient, ranks: int, model: Path, data: Path, steps: int
) -> tuple[float, float]:
    """The same fine-tune as a TrainJob: wall seconds, median step tokens/s."""
    config = TorchTuneConfig(
        batch_size=SETTINGS["batch_size"],
        num_nodes=ranks,
        resources_per_node={"nvidia.com/gpu": 1},
        peft_config=LoraConfig(lora_rank=SETTINGS["lora_rank"], lora_alpha=SETTINGS["lora_alpha"]),
        dataset_preprocess_config=TorchTuneInstructDataset(
            source=DataFormat.JSON, column_map=COLUMNS
        ),
        max_steps=steps,
        learning_rate=SETTINGS["learning_rate"],
        gradient_accumulation_steps=1,
        device="cpu",
        dtype=DataType.FP32,
        overrides={"lr_scheduler.num_warmup_steps": 2},
    )
    wall, name = run_builtin_job(client, "torchtune-llama3.2-1b", model, data, config)
    speeds = [
        point.values["tokens_per_second"]
        for point in client.get_job_metrics(name)
        if "tokens_per_second" in point.values
    ]
    client.delete_job(name)
    return wall, statistics.median(speeds)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--python", default=str(ROOT / ".venv-torchtune" / "bin" / "python"))
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"  # every side: one thread per rank
    work = Path(tempfile.mkdtemp(prefix="bench-torchtune-"))
    model = work / "tiny-llama3_2"
    subprocess.run(
        [args.python, "-m", "trainer_sdk.training.engines.torchtune.tiny_model", str(model)],
        check=True,
        capture_output=True,
    )
    data = write_data(work / "repeat.jsonl")
    client = TrainerClient(
        LocalBackendConfig(
            root=work / "jobs", stop_on_exit=True, python=args.python, accelerators_on_cpu=True
        )
    )
    table = []
    try:
        for ranks in args.ranks:
            direct = partial(tune_run, args.python, ranks=ranks, model=model, data=data)
            sides: dict[str, Callable[[], tuple[float, float]]] = {
                "platform": partial(platform, client, ranks, model, data, args.steps),
                "tune run": partial(direct, RECIPE, steps=args.steps, work=work),
            }
            if ranks == 1:
                stock = "lora_finetune_single_device"
                sides["tune run (torchtune's recipe)"] = partial(
                    direct, stock, steps=args.steps, work=work
                )
            runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for repeat in range(args.repeats):
                order = list(sides) if repeat % 2 == 0 else list(reversed(sides))
                for side in order:
                    runs[side].append(sides[side]())
                    wall, speed = runs[side][-1]
                    print(
                        f"  {ranks} rank(s) {side:30s} {wall:6.1f} s {speed:8.0f} tokens/s",
                        flush=True,
                    )
            for side, results in runs.items():
                wall = statistics.median(result[0] for result in results)
                speed = statistics.median(result[1] for result in results)
                table.append((ranks, side, wall, speed))
    finally:
        client.backend.close()  # type: ignore[attr-defined]
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\nmedian of {args.repeats} runs, {args.steps} steps, LoRA, load {os.getloadavg()[0]:.1f}"
    )
    print("| ranks | run | wall s | / tune run | tokens/s |")
    print("|---:|---|---:|---:|---:|")
    baseline = {ranks: wall for ranks, side, wall, _ in table if side == "tune run"}
    met = True
    for ranks, side, wall, speed in table:
        ratio = wall / baseline[ranks]
        met &= side != "platform" or ratio <= TARGET
        print(f"| {ranks} | {side} | {wall:.1f} | {ratio:.2f} | {speed:.0f} |")
    print(f"\nplatform / tune run wall-time target <= {TARGET:.2f}: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
