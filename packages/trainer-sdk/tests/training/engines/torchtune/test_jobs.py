"""Upstream's ``BuiltinTrainer(TorchTuneConfig)`` call fine-tunes tiny models of the torchtune
runtimes' families through the platform (local backend with ``accelerators_on_cpu``, the jobs'
Python torchtune's environment, real torchrun and gloo): full, LoRA and QLoRA, on one and two
nodes; the loss falls over 20 steps, each step reports its metrics, the model written loads and
generates with transformers; a rank killed mid-run resumes from its checkpoint to the same final
loss as an uninterrupted run, and so does a job suspended and resumed."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_sdk import (
    BuiltinTrainer,
    CheckpointVolume,
    DataType,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalBackendConfig,
    LoraConfig,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TrainerClient,
    constants,
)
from trainer_sdk.backends.local import volumes
from transformers import AutoModelForCausalLM, AutoTokenizer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 20
FAULT_SUPPORT = Path(__file__).with_name("fault_after_commit")
ONE_GPU = {"nvidia.com/gpu": 1}  # one process per node; accelerators_on_cpu runs it on the CPU


@pytest.fixture
def client(tmp_path: Path, torchtune_python: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # one thread per rank on a 2-core machine
    client = TrainerClient(
        LocalBackendConfig(
            root=tmp_path / "jobs",
            stop_on_exit=True,
            python=torchtune_python,
            accelerators_on_cpu=True,
        )
    )
    yield client
    client.backend.close()


def _initializer(model: Path, data: Path) -> Initializer:
    return Initializer(
        model=HuggingFaceModelInitializer(str(model)),
        dataset=HuggingFaceDatasetInitializer(str(data)),
    )


def _config(nodes: int, lora: LoraConfig | None, **settings: Any) -> TorchTuneConfig:
    return TorchTuneConfig(
        dtype=DataType.BF16 if lora is not None and lora.quantize_base else DataType.FP32,
        batch_size=2,
        epochs=2,
        num_nodes=nodes,
        resources_per_node=ONE_GPU,
        peft_config=lora,
        # The format comes from the file's suffix (.jsonl); the columns are named here.
        dataset_preprocess_config=TorchTuneInstructDataset(
            column_map={"input": "question", "output": "answer"}
        ),
        max_steps=STEPS,
        gradient_accumulation_steps=1,
        learning_rate=3e-3,
        seed=7,
        # The LoRA configs warm the learning rate up over 100 steps; the full ones keep it.
        overrides={"lr_scheduler.num_warmup_steps": 2} if lora is not None else None,
        **settings,
    )


def _run(client: TrainerClient, runtime: str, initializer: Initializer, **kwargs: Any) -> Any:
    name = client.train(runtime=runtime, initializer=initializer, **kwargs)
    job = client.wait_for_job_status(name, timeout=900, polling_interval=1)
    assert job.status == constants.TRAINJOB_COMPLETE
    return job


def _losses(client: TrainerClient, name: str) -> dict[int, float]:
    """The loss reported at each step (the last attempt's where a step ran twice)."""
    return {p.step: p.values["loss"] for p in client.get_job_metrics(name) if "loss" in p.values}


@pytest.mark.parametrize(
    ("runtime", "family", "nodes", "lora"),
    [
        pytest.param("torchtune-llama3.2-1b", "llama3_2", 1, None, id="full-1-node"),
        pytest.param(
            "torchtune-llama3.2-1b",
            "llama3_2",
            1,
            LoraConfig(lora_rank=8, lora_alpha=16, lora_dropout=0.0),
            id="lora-1-node",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            "qwen2_5",
            1,
            # NF4 quantizes in blocks of 64 x 256: not the tiny model's 128 x 64 v_proj.
            LoraConfig(
                lora_rank=8,
                lora_alpha=16,
                quantize_base=True,
                lora_attn_modules=["q_proj", "output_proj"],
                apply_lora_to_mlp=True,
            ),
            id="qlora-1-node-qwen",
        ),
        pytest.param("torchtune-llama3.2-3b", "llama3_2", 2, None, id="full-2-nodes-3b-runtime"),
    ],
)
def test_torchtune_fine_tunes_and_the_model_loads_and_generates(
    client: TrainerClient,
    tiny_models: Path,
    instruct_data: Path,
    runtime: str,
    family: str,
    nodes: int,
    lora: LoraConfig | None,
) -> None:
    job = _run(
        client,
        runtime,
        _initializer(tiny_models / family, instruct_data),
        trainer=BuiltinTrainer(_config(nodes, lora)),
    )
    _check_run(client, job, tiny_models / family, lora)


def _check_run(client: TrainerClient, job: Any, base_dir: Path, lora: LoraConfig | None) -> None:
    """Loss falling over the 20 steps, each step's metrics and progress, and the model written:
    it loads and generates; after LoRA it is the base plus the adapter PEFT loads."""
    losses = _losses(client, job.name)
    assert sorted(losses) == list(range(1, STEPS + 1))
    first, last = (
        statistics.mean(losses[s] for s in range(1, 6)),
        statistics.mean(losses[s] for s in range(STEPS - 4, STEPS + 1)),
    )
    assert last < first - 0.5, losses
    points = [point for point in client.get_job_metrics(job.name) if "loss" in point.values]
    # torchtune's warm-up starts from 0 (the LoRA runs': 2 steps)
    assert all(point.values["learning_rate"] > 0 for point in points if point.step > 2)
    assert all(point.values.get("tokens_per_second", 1) > 0 for point in points)
    assert job.trainer_status is not None and job.trainer_status.progress_percentage == 100

    assert job.output is not None
    output = Path(job.output)
    tokenizer = AutoTokenizer.from_pretrained(output / "model")
    model = AutoModelForCausalLM.from_pretrained(output / "model", dtype=torch.float64)
    prompt = tokenizer("Repeat twice: red cat", return_tensors="pt")
    generated = model.generate(**prompt, max_new_tokens=4, do_sample=False)
    assert generated.shape[1] == prompt["input_ids"].shape[1] + 4
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float64)
    changed = {
        name
        for name, weight in model.state_dict().items()
        if not torch.equal(weight, base.state_dict()[name])
    }
    if lora is None:
        assert not (output / "adapter").exists()
        assert changed == set(base.state_dict())
        return
    assert (output / "adapter" / "adapter_config.json").is_file()
    if lora.quantize_base:  # the base the adapter was trained on is the NF4-rounded one
        return
    from peft import PeftModel

    assert changed and all(name.endswith("proj.weight") for name in changed)
    adapted = PeftModel.from_pretrained(base, output / "adapter")
    with torch.no_grad():  # in float64: what differs is the merge's rounding to float32
        torch.testing.assert_close(
            model(**prompt).logits, adapted(**prompt).logits, rtol=1e-5, atol=1e-5
        )


def _faulty_runtime(fault: str) -> dict[str, Any]:
    """torchtune-llama3.2-1b as a TrainingRuntime (shadowing the built-in one, whose name says
    the model) restarting its JobSet once, its trainer pods' Python with ``FAULT_AFTER_COMMIT``
    (``kill:N``, ``hold:N``) on the first attempt."""
    from trainer_runtime import builtin_runtimes

    doc: dict[str, Any] = builtin_runtimes()["torchtune-llama3.2-1b"].to_dict()
    doc["kind"] = "TrainingRuntime"
    doc["metadata"]["namespace"] = "default"
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    (node,) = [
        job for job in doc["spec"]["template"]["spec"]["replicatedJobs"] if job["name"] == "node"
    ]
    pod = node["template"]["spec"]["template"]["spec"]
    # Time for the ranks to finish their step and save it after SIGTERM, however loaded the
    # machine (the local backend's default is 5 s before SIGKILL).
    pod["terminationGracePeriodSeconds"] = 120
    container = pod["containers"][0]
    container["env"] = [
        {"name": "PYTHONPATH", "value": str(FAULT_SUPPORT)},
        {"name": "FAULT_AFTER_COMMIT", "value": fault},
    ]
    return doc


def _wait_for(path: Path, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear within {seconds} s"
        time.sleep(0.1)  # polling a file another process writes; the deadline bounds it


def test_lora_on_two_nodes_resumes_after_kill_and_suspend_to_the_same_final_loss(
    client: TrainerClient, tiny_models: Path, instruct_data: Path
) -> None:
    """LoRA on two nodes, uninterrupted; then rank 0 dies (SIGKILL) right after committing
    checkpoint 10 of 20 (the JobSet restarts, both ranks resume there); then rank 0 waits after
    that commit while the job is suspended (SIGTERM: every rank saves the step it is at and
    exits) and resumed. All three end at the same loss."""
    lora = LoraConfig(lora_rank=8, lora_alpha=16)
    config = _config(2, lora, save_steps=5)
    initializer = _initializer(tiny_models / "llama3_2", instruct_data)
    volume = volumes.claim_path("default", "ckpt", client.backend.root)
    final = {}
    for case, fault in (("steady", None), ("killed", "kill:10"), ("suspended", "hold:10")):
        if fault is not None:
            client.apply_runtime(_faulty_runtime(fault))
        name = client.train(
            runtime="torchtune-llama3.2-1b",
            initializer=initializer,
            trainer=BuiltinTrainer(config),
            options=[CheckpointVolume("ckpt")],
        )
        if case == "suspended":
            _wait_for(volume / name / "step-000000010" / "COMMITTED")
            client.suspend_job(name)
            assert client.get_job(name).status == constants.TRAINJOB_SUSPENDED
            client.resume_job(name)
        job = client.wait_for_job_status(name, timeout=900, polling_interval=1)
        assert job.status == constants.TRAINJOB_COMPLETE
        final[case] = _losses(client, name)[STEPS]
        log = "\n".join(client.get_job_logs(name, step="node-0"))
        if case == "steady":
            _check_run(client, job, tiny_models / "llama3_2", lora)
            assert "resumed from" not in log
        elif case == "killed":
            assert "1 restart" in (job.message or "")
            assert "resumed from the checkpoint of step 10 (" in log
        else:  # the SIGTERM's save: the step the ranks were at when it came
            assert "resumed from the checkpoint of step 11 (" in log
        assert (volume / name / f"step-{STEPS:09d}" / "COMMITTED").is_file()
    assert final["killed"] == final["steady"] == final["suspended"]
