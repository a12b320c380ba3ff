"""TRL fine-tunes a tiny model through the platform (local backend, real torchrun and gloo):
full and LoRA on one and two nodes, Llama and Qwen2 (model and data from the Hub stand-in, from
paths, from a claim), the loss falls over 20 steps, each step reports its metrics, and the model
it writes loads and generates; a rank killed mid-run resumes from the engine's checkpoint to the
same final loss as an uninterrupted run."""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from trainer_sdk import (
    BuiltinTrainer,
    CheckpointVolume,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LoraConfig,
    TrainerClient,
    TRLConfig,
    constants,
)
from trainer_sdk.backends.local import volumes
from trainer_sdk.cli import cli
from transformers import AutoModelForCausalLM, AutoTokenizer

from .conftest import faulty_runtime

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 20


def _losses(client: TrainerClient, name: str) -> dict[int, float]:
    """The loss logged at each step (the last attempt's where a step ran twice)."""
    return {p.step: p.values["loss"] for p in client.get_job_metrics(name) if "loss" in p.values}


def _generates(model: Any, tokenizer: Any) -> list[int]:
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "what is the color of the sky"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    output = model.generate(**prompt, max_new_tokens=4, do_sample=False)
    return [int(token) for token in output[0, prompt["input_ids"].shape[1] :]]


@pytest.mark.parametrize(
    ("nodes", "lora", "source", "family"),
    [
        pytest.param(1, False, "hub", "llama", id="full-1-node"),
        pytest.param(1, True, "hub", "qwen2", id="lora-1-node-qwen2"),
        pytest.param(2, False, "path", "llama", id="full-2-nodes"),
        pytest.param(2, True, "claim", "llama", id="lora-2-nodes"),
    ],
)
def test_trl_fine_tunes_and_the_model_loads_and_generates(
    client: TrainerClient,
    hub: str,
    tiny_model: Path,
    tiny_qwen2: Path,
    chat_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nodes: int,
    lora: bool,
    source: str,
    family: str,
) -> None:
    base_model = {"llama": tiny_model, "qwen2": tiny_qwen2}[family]
    if source == "hub":  # hf:// through HF_ENDPOINT (the Hub stand-in)
        initializer = Initializer(
            model=HuggingFaceModelInitializer(f"hf://tiny/{family}"),
            dataset=HuggingFaceDatasetInitializer("hf://tiny/colors"),
        )
    elif source == "path":  # paths on this machine: a directory and ./file, never a repo name
        monkeypatch.chdir(chat_file.parent)
        initializer = Initializer(
            model=HuggingFaceModelInitializer(str(base_model)),
            dataset=HuggingFaceDatasetInitializer(f"./{chat_file.name}"),
        )
    else:  # a claim (here the local volume of that name), as a model kept in a cluster
        claim = volumes.claim_path("default", "inputs", client.backend.root)
        shutil.copytree(base_model, claim / "models" / "llama")
        shutil.copy(chat_file, claim / chat_file.name)
        initializer = Initializer(
            model=HuggingFaceModelInitializer("pvc://inputs/models/llama"),
            dataset=HuggingFaceDatasetInitializer(f"pvc://inputs/{chat_file.name}"),
        )
    config = TRLConfig(
        num_nodes=nodes,
        max_steps=STEPS,
        batch_size=4,
        learning_rate=1e-2 if lora else 2e-3,
        seed=7,
        peft_config=LoraConfig(lora_rank=8, lora_alpha=16) if lora else None,
    )
    name = client.train(runtime="trl-cpu", initializer=initializer, trainer=BuiltinTrainer(config))
    job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
    assert job.status == constants.TRAINJOB_COMPLETE

    losses = _losses(client, name)
    assert sorted(losses) == list(range(1, STEPS + 1))
    first, last = [losses[s] for s in range(1, 6)], [losses[s] for s in range(STEPS - 4, STEPS + 1)]
    assert statistics.mean(last) < statistics.mean(first) - 0.05, losses
    points = client.get_job_metrics(name)
    assert all("learning_rate" in p.values for p in points if "loss" in p.values)
    assert any(p.values.get("tokens_per_second", 0) > 0 for p in points)
    assert job.trainer_status is not None and job.trainer_status.progress_percentage == 100

    assert job.output is not None
    shown = CliRunner().invoke(cli, ["--root", str(tmp_path / "jobs"), "get", name, "-o", "json"])
    assert json.loads(shown.output)["output"] == job.output  # trainer get says where it is
    output = Path(job.output)
    tokenizer = AutoTokenizer.from_pretrained(output / "model")
    model = AutoModelForCausalLM.from_pretrained(output / "model", dtype=torch.float32)
    assert len(_generates(model, tokenizer)) >= 1
    base = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    changed = [
        name
        for name, weight in model.state_dict().items()
        if not torch.equal(weight, base.state_dict()[name])
    ]
    if lora:  # the merged model is the base plus the adapter, in LoRA's target modules only
        from peft import PeftModel

        assert (output / "adapter" / "adapter_config.json").is_file()
        assert changed and all(("q_proj" in n or "v_proj" in n or "o_proj" in n) for n in changed)
        adapted = PeftModel.from_pretrained(base, output / "adapter")
        ids = tokenizer("what is the color of the sky", return_tensors="pt")["input_ids"]
        with torch.no_grad():
            torch.testing.assert_close(model(ids).logits, adapted(ids).logits, rtol=1e-5, atol=1e-5)
    else:
        assert not (output / "adapter").exists()
        assert len(changed) == len(base.state_dict())


def _wait_for(path: Path, seconds: float = 600) -> None:
    """Until ``path`` exists (bounded)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear within {seconds} s"
        time.sleep(0.1)


def test_an_interrupted_fine_tune_resumes_to_the_same_final_loss(
    client: TrainerClient, tiny_model: Path, chat_file: Path
) -> None:
    """Right after committing checkpoint 10 of 20 (first attempt only), rank 0 either kills
    itself with SIGKILL (the JobSet restarts) or waits while the job is suspended and resumed;
    both runs resume from that checkpoint and end at the uninterrupted run's loss."""
    config = TRLConfig(num_nodes=2, max_steps=STEPS, batch_size=4, learning_rate=2e-3, save_steps=5)
    initializer = Initializer(
        model=HuggingFaceModelInitializer(str(tiny_model)),
        dataset=HuggingFaceDatasetInitializer(str(chat_file)),
    )
    checkpoints = volumes.claim_path("default", "ckpt", client.backend.root)
    final = {}
    for case, fault in (
        ("steady", None),
        ("killed", "--kill-at=10"),
        ("suspended", "--hold-at=10"),
    ):
        client.apply_runtime(faulty_runtime(f"trl-{case}", fault))
        name = client.train(
            runtime=f"trl-{case}",
            initializer=initializer,
            trainer=BuiltinTrainer(config),
            options=[CheckpointVolume("ckpt")],
        )
        if case == "suspended":
            _wait_for(checkpoints / name / "checkpoint-10" / "COMMITTED")
            client.suspend_job(name)
            assert client.get_job(name).status == constants.TRAINJOB_SUSPENDED
            client.resume_job(name)
        job = client.wait_for_job_status(name, timeout=600, polling_interval=1)
        assert job.status == constants.TRAINJOB_COMPLETE
        final[case] = _losses(client, name)[STEPS]
        log = "\n".join(client.get_job_logs(name, step="node-0"))
        # The pods see the claim at the checkpoint volume's mount path.
        resumed = f"resuming from /checkpoints/{name}/checkpoint-10" in log
        assert resumed == (fault is not None), log[-2000:]
        assert (job.message == "1 restart") == (case == "killed")
        assert (checkpoints / name / "checkpoint-20" / "COMMITTED").is_file()
    assert final["killed"] == final["steady"] == final["suspended"]
