"""Fine-tune an LLM through the platform, on this machine: a tiny Llama-shaped model generated from
a config (nothing is downloaded), LoRA with TRL on two local nodes (torchrun, gloo), then the
merged model loaded with transformers to answer a question.

    python examples/finetune_llm.py [--blueprint sft] [--nodes 2] [--steps 30] [--workdir DIR]

``--blueprint`` picks the method: ``sft`` (supervised, the default), ``dpo`` and ``kto``
(preference pairs), ``grpo`` (rewards from rules), ``distillation`` (from a second tiny model,
the teacher) or ``qat`` (quantization-aware, full fine-tuning; the written model is torchao's).
It prints the loss of every step as the job logs it (and the method's own headline metric:
reward margin, mean reward), whether it improved, where the model was written, and what the
fine-tuned model generates. The same ``train`` call runs in a cluster with
``TrainerClient(KubernetesBackendConfig())`` and hf:// or s3:// initializers (see the SDK README,
"Fine-tune an LLM").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from trainer_sdk import (
    DPO,
    GRPO,
    KTO,
    QAT,
    BuiltinTrainer,
    Distillation,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LengthReward,
    LocalBackendConfig,
    LoraConfig,
    PreferenceDataset,
    PromptDataset,
    RegexReward,
    TrainerClient,
    TRLConfig,
)
from trainer_sdk.training.engines.tiny_model import write_tiny_model

COLORS = {"sky": "blue", "sun": "yellow", "grass": "green", "snow": "white", "night": "black"}


def write_data(path: Path, blueprint: str) -> Path:
    """Questions about colours, as JSONL: with their one-word answers as chat messages (sft,
    qat), with a chosen and a rejected answer (dpo, kto), or alone (grpo, distillation)."""
    questions = [(f"what is the color of the {thing}", color) for thing, color in COLORS.items()]
    if blueprint in ("dpo", "kto"):
        records: list[dict[str, object]] = [
            {"prompt": question, "chosen": f"the {color}", "rejected": "a car"}
            for question, color in questions
        ]
    elif blueprint in ("grpo", "distillation"):
        records = [{"prompt": question} for question, _ in questions]
    else:
        records = [
            {
                "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": color},
                ]
            }
            for question, color in questions
        ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records * 20))
    return path


# Each blueprint's TRLConfig settings beyond the shared ones, and the metric that shows it
# learning (+1: it rises, -1: it falls).
BLUEPRINTS: dict[str, tuple[dict[str, object], str, int]] = {
    "sft": ({"learning_rate": 2e-2}, "loss", -1),
    "dpo": (
        {
            "method": DPO(beta=0.1),
            "learning_rate": 5e-3,
            "dataset_preprocess_config": PreferenceDataset(),
        },
        "reward_margin",
        1,
    ),
    "kto": (
        {
            "method": KTO(beta=0.1),
            "learning_rate": 5e-3,
            "dataset_preprocess_config": PreferenceDataset(),
        },
        "reward_margin",
        1,
    ),
    "grpo": (
        {
            "method": GRPO(
                rewards=[LengthReward(target=6), RegexReward("[a-z ]+", weight=0.5)],
                num_generations=4,
                max_new_tokens=6,
            ),
            "learning_rate": 3e-2,
            "dataset_preprocess_config": PromptDataset(),
        },
        "reward",
        1,
    ),
    "distillation": (
        {"learning_rate": 3e-2, "dataset_preprocess_config": PromptDataset()},  # + the teacher
        "loss",
        -1,
    ),
    "qat": ({"learning_rate": 2e-3, "quantization_aware": QAT(group_size=32)}, "loss", -1),
}


def config(blueprint: str, nodes: int, steps: int, workdir: Path) -> TRLConfig:
    """The job's TRLConfig: LoRA (rank 8, on attention and MLP) except for QAT, which trains
    every weight it quantizes."""
    settings = dict(BLUEPRINTS[blueprint][0])
    if blueprint == "distillation":
        teacher = write_tiny_model(workdir / "tiny-teacher", seed=1)
        settings["method"] = Distillation(
            teacher=HuggingFaceModelInitializer(str(teacher.resolve())), max_new_tokens=6
        )
    lora = (
        None
        if blueprint == "qat"
        else LoraConfig(lora_rank=8, lora_alpha=16, apply_lora_to_mlp=True)
    )
    return TRLConfig(
        num_nodes=nodes,
        max_steps=steps,
        batch_size=4,
        peft_config=lora,
        **settings,
    )


def generate(model_dir: Path, question: str, quantized: bool) -> str:
    """The fine-tuned model's greedy answer to ``question``, with its chat template."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if quantized:  # torchao's tensors: the engine's own loader
        from trainer_sdk.training.engines.qat_model import load_quantized

        model = load_quantized(model_dir)
    else:
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
    parser.add_argument("--blueprint", choices=sorted(BLUEPRINTS), default="sft")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=Path("finetune-llm"))
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    # Two ranks share a laptop's cores: one thread each (the pods inherit this environment).
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    args.workdir.mkdir(parents=True, exist_ok=True)
    model = write_tiny_model(args.workdir / "tiny-llama")
    data = write_data(args.workdir / f"{args.blueprint}.jsonl", args.blueprint)
    client = TrainerClient(LocalBackendConfig())
    name = client.train(
        runtime="trl-cpu",
        initializer=Initializer(
            model=HuggingFaceModelInitializer(str(model.resolve())),
            dataset=HuggingFaceDatasetInitializer(str(data.resolve())),
        ),
        trainer=BuiltinTrainer(config(args.blueprint, args.nodes, args.steps, args.workdir)),
    )
    kind = "full, quantization-aware" if args.blueprint == "qat" else "LoRA"
    print(f"TrainJob {name}: TRL {args.blueprint} ({kind}) on {args.nodes} local nodes", flush=True)
    job = client.wait_for_job_status(name, timeout=args.timeout, polling_interval=1)
    _, metric, sign = BLUEPRINTS[args.blueprint]
    points = sorted(
        (p for p in client.get_job_metrics(name) if "loss" in p.values), key=lambda p: p.step
    )
    for point in points:
        shown = (
            "" if metric == "loss" else f"  {metric} {point.values.get(metric, float('nan')):.4f}"
        )
        print(f"step {point.step:3d}  loss {point.values['loss']:.4f}{shown}")
    values = [p.values[metric] for p in points if metric in p.values]
    # Means of the first and the last five steps: GRPO's and KTO's steps vary with their samples.
    first, last = statistics.mean(values[:5]), statistics.mean(values[-5:])
    improved = (last - first) * sign > 0
    print(f"{metric} {first:.4f} -> {last:.4f} ({'improving' if improved else 'NOT improving'})")
    print(f"TrainJob {name}: {job.status}; the model is in {job.output}")
    for thing, color in COLORS.items():
        question = f"what is the color of the {thing}"
        answer = generate(Path(str(job.output)) / "model", question, args.blueprint == "qat")
        taught = f" (trained on {color!r})" if args.blueprint in ("sft", "qat") else ""
        print(f"{question}? {answer!r}{taught}")
    return 0 if improved else 1


if __name__ == "__main__":
    sys.exit(main())
