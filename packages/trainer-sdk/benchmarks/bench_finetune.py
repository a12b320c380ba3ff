"""The platform's overhead on a fine-tune: BuiltinTrainer(TRLConfig) through TrainerClient (local
backend: initializers, supervisor, torchrun, the TRL engine) against running TRL directly
(``torchrun`` on a plain TRL script), the same tiny 20-step LoRA fine-tune, alternated in one run.

Per row (nodes: the platform's two nodes of one process each against ``torchrun
--nproc-per-node 2``), the median over ``--repeats`` runs of the wall time (from the call that
starts the job until it has ended, the model written) and the tokens/s TRL reports for the
training loop (tokens seen / ``train_runtime``); the ratio is platform / direct wall time
(target <= 1.10). Both sides run one thread per rank (``OMP_NUM_THREADS=1``), the same model
(``tiny_model``, built here), data (prompt-completion JSONL) and TRL arguments, and both write
the adapter and the merged model.

    python packages/trainer-sdk/benchmarks/bench_finetune.py [--repeats 3] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from builtin_jobs import run_builtin_job
from trainer_sdk import (
    LocalBackendConfig,
    LoraConfig,
    TrainerClient,
    TRLConfig,
)
from trainer_sdk.training.engines.tiny_model import write_tiny_model

TARGET = 1.10
LEARNING_RATE = 2e-3
BATCH = 4
LORA = {"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj", "o_proj"]}
# The plain TRL script: what a user runs without the platform.
DIRECT_SCRIPT = f"""
import sys
from datasets import load_dataset
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

model, data, out, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
args = SFTConfig(
    output_dir=out + "/checkpoints", max_steps=steps, per_device_train_batch_size={BATCH},
    learning_rate={LEARNING_RATE}, logging_steps=1, report_to="none", disable_tqdm=True,
    use_cpu=True, bf16=False, save_strategy="steps", save_total_limit=2,
)
trainer = SFTTrainer(
    model=model, args=args, train_dataset=load_dataset("json", data_files=data, split="train"),
    peft_config=LoraConfig(**{LORA}),
)
trainer.train()
if trainer.accelerator.is_main_process:
    trainer.model.save_pretrained(out + "/adapter")
    trainer.model.merge_and_unload().save_pretrained(out + "/model")
    trainer.processing_class.save_pretrained(out + "/model")
trainer.accelerator.wait_for_everyone()
"""
_RUNTIME = re.compile(r"'train_runtime': '([\d.]+)'")
_TOKENS = re.compile(r"'num_tokens': '([\d.]+)'")


def tokens_per_second(log: str) -> float:
    """Tokens seen / train_runtime, as TRL logs them (its last num_tokens, its train_runtime)."""
    runtime = float(_RUNTIME.findall(log)[-1])
    return float(_TOKENS.findall(log)[-1]) / runtime


def write_data(path: Path) -> Path:
    colors = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}
    records = [
        {
            "prompt": [{"role": "user", "content": f"what is the color of the {thing}"}],
            "completion": [{"role": "assistant", "content": color}],
        }
        for _ in range(20)
        for thing, color in colors.items()
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def direct(work: Path, model: Path, data: Path, nodes: int, steps: int) -> tuple[float, float]:
    """torchrun on the plain TRL script: wall seconds and tokens/s."""
    script = work / "sft_direct.py"
    script.write_text(DIRECT_SCRIPT)
    out = Path(tempfile.mkdtemp(dir=work, prefix="direct-"))
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1"]
    command += ["--nproc-per-node", str(nodes), "--master-port", str(free_port())]
    command += [str(script), str(model), str(data), str(out), str(steps)]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - started
    if result.returncode != 0 or not (out / "model" / "config.json").is_file():
        raise RuntimeError(f"direct run failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return wall, tokens_per_second(result.stdout + result.stderr)


def platform(
    client: TrainerClient, model: Path, data: Path, nodes: int, steps: int
) -> tuple[float, float]:
    """The same fine-tune as a TrainJob: wall seconds and tokens/s."""
    lora = LoraConfig(lora_rank=LORA["r"], lora_alpha=LORA["lora_alpha"])  # q, v, o (output_proj)
    config = TRLConfig(
        num_nodes=nodes,
        max_steps=steps,
        batch_size=BATCH,
        learning_rate=LEARNING_RATE,
        peft_config=lora,
    )
    wall, name = run_builtin_job(client, "trl-cpu", model, data, config)
    log = "\n".join(client.get_job_logs(name, step="node-0"))
    client.delete_job(name)
    return wall, tokens_per_second(log)


Row = tuple[int, dict[str, float], dict[str, float]]


def measure(
    client: TrainerClient,
    work: Path,
    model: Path,
    data: Path,
    node_counts: list[int],
    repeats: int,
    steps: int,
) -> list[Row]:
    """Per node count: the median wall time and tokens/s of each side, alternating sides."""
    rows = []
    for nodes in node_counts:
        walls: dict[str, list[float]] = {"direct": [], "platform": []}
        speeds: dict[str, list[float]] = {"direct": [], "platform": []}
        for repeat in range(repeats):
            order = ("direct", "platform") if repeat % 2 == 0 else ("platform", "direct")
            for side in order:
                if side == "direct":
                    wall, speed = direct(work, model, data, nodes, steps)
                else:
                    wall, speed = platform(client, model, data, nodes, steps)
                walls[side].append(wall)
                speeds[side].append(speed)
                print(
                    f"  {nodes} node(s) {side:8s} {wall:6.1f} s  {speed:7.0f} tokens/s", flush=True
                )
        medians = {side: statistics.median(values) for side, values in walls.items()}
        rows.append((nodes, medians, {side: statistics.median(v) for side, v in speeds.items()}))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"  # both sides: one thread per rank
    work = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    model = write_tiny_model(work / "tiny-llama")
    data = write_data(work / "colors.jsonl")
    client = TrainerClient(LocalBackendConfig(root=work / "jobs", stop_on_exit=True))
    try:
        rows = measure(client, work, model, data, args.nodes, args.repeats, args.steps)
    finally:
        client.backend.close()  # type: ignore[attr-defined]
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"\nmedian of {args.repeats} runs, {args.steps} steps, LoRA, load average {load:.1f}")
    print(
        "| ranks | direct wall s | platform wall s | ratio | direct tokens/s | platform tokens/s |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    met = True
    for nodes, wall, speed in rows:
        ratio = wall["platform"] / wall["direct"]
        met &= ratio <= TARGET
        print(f"| {nodes} | {wall['direct']:.1f} | {wall['platform']:.1f} | {ratio:.2f} | "
              f"{speed['direct']:.0f} | {speed['platform']:.0f} |")  # fmt: skip
    print(f"\nwall-time ratio target <= {TARGET:.2f}: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
