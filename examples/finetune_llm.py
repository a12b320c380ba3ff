"""Fine-tune an LLM through the platform, on this machine: a tiny Llama-shaped model generated from
a config (nothing is downloaded), LoRA with TRL on two local nodes (torchrun, gloo), then the
merged model loaded with transformers to answer a question.

    python examples/finetune_llm.py [--nodes 2] [--steps 30] [--workdir finetune-llm]

It prints the loss of every step as the job logs it (falling), where the model was written, and
what the fine-tuned model generates. The same ``train`` call runs in a cluster with
``TrainerClient(KubernetesBackendConfig())`` and hf:// or s3:// initializers (see the SDK README,
"Fine-tune an LLM").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from trainer_sdk import (
    BuiltinTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalBackendConfig,
    LoraConfig,
    TrainerClient,
    TRLConfig,
)
from trainer_sdk.training.engines.tiny_model import write_tiny_model

COLORS = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}


def write_data(path: Path) -> Path:
    """A chat data set: questions about colours and their one-word answers, as JSONL."""
    records = [
        {
            "messages": [
                {"role": "user", "content": f"what is the color of the {thing}"},
                {"role": "assistant", "content": color},
            ]
        }
        for _ in range(20)
        for thing, color in COLORS.items()
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def generate(model_dir: Path, question: str) -> str:
    """The fine-tuned model's greedy answer to ``question``, with its chat template."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    output = model.generate(**prompt, max_new_tokens=6, do_sample=False)
    answer = output[0, prompt["input_ids"].shape[1] :]
    return str(tokenizer.decode(answer, skip_special_tokens=True))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=Path("finetune-llm"))
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    # Two ranks share a laptop's cores: one thread each (the pods inherit this environment).
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    args.workdir.mkdir(parents=True, exist_ok=True)
    model = write_tiny_model(args.workdir / "tiny-llama")
    data = write_data(args.workdir / "colors.jsonl")
    client = TrainerClient(LocalBackendConfig())
    name = client.train(
        runtime="trl-cpu",
        initializer=Initializer(
            model=HuggingFaceModelInitializer(str(model.resolve())),
            dataset=HuggingFaceDatasetInitializer(str(data.resolve())),
        ),
        trainer=BuiltinTrainer(
            TRLConfig(
                num_nodes=args.nodes,
                max_steps=args.steps,
                batch_size=4,
                learning_rate=2e-2,
                peft_config=LoraConfig(lora_rank=8, lora_alpha=16, apply_lora_to_mlp=True),
            )
        ),
    )
    print(f"TrainJob {name}: TRL LoRA on {args.nodes} local nodes", flush=True)
    job = client.wait_for_job_status(name, timeout=args.timeout, polling_interval=1)
    losses = {p.step: p.values["loss"] for p in client.get_job_metrics(name) if "loss" in p.values}
    for step, loss in sorted(losses.items()):
        print(f"step {step:3d}  loss {loss:.4f}")
    first, last = losses[min(losses)], losses[max(losses)]
    print(f"loss {first:.4f} -> {last:.4f} ({'falling' if last < first else 'NOT falling'})")
    print(f"TrainJob {name}: {job.status}; the model is in {job.output}")
    for thing, color in COLORS.items():
        question = f"what is the color of the {thing}"
        answer = generate(Path(str(job.output)) / "model", question)
        print(f"{question}? {answer!r} (trained on {color!r})")
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
