"""Quantization-aware training through the platform (local backend, real TRL and torchao on
tiny Llamas, tied and untied word embeddings): the job trains fake-quantized, converts, and
writes a quantized model that loads; its held-out loss is within 5 % of the same fine-tune
without QAT; a QAT job killed mid-run resumes from its checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torchao.quantization import IntxUnpackedToInt8Tensor
from trainer_sdk import QAT, TrainerClient, TRLConfig
from trainer_sdk.training.engines import qat_model
from trainer_sdk.training.engines.tiny_model import write_tiny_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from .conftest import faulty_runtime, heldout_texts, run_to_completion

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
STEPS = 20


@pytest.fixture(scope="module")
def tiny_tied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tied") / "llama", tied=True)


def heldout_loss(model: Any, tokenizer: Any) -> float:
    """Mean next-token loss (float64) over every token of held-out conversations: a question
    never in training ("tell me the color of the sky") and its answer."""
    batch = tokenizer(heldout_texts(tokenizer), return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**batch).logits[:, :-1].double()
    targets = batch["input_ids"][:, 1:].masked_fill(batch["attention_mask"][:, 1:] == 0, -100)
    return float(torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets))


@pytest.mark.parametrize(
    ("tied", "nodes", "fault"),
    [
        pytest.param(False, 2, "--kill-at=10", id="untied-2-nodes-killed-at-10"),
        pytest.param(True, 1, None, id="tied-1-node"),
    ],
)
def test_qat_model_loads_quantized_within_5_percent_of_plain_fine_tune(
    client: TrainerClient,
    tiny_model: Path,
    tiny_tied: Path,
    chat_file: Path,
    tied: bool,
    nodes: int,
    fault: str | None,
) -> None:
    """Untied, the QAT job's rank 0 is killed after checkpoint 10 and the job resumes from it."""
    base = tiny_tied if tied else tiny_model
    settings: dict[str, Any] = dict(
        num_nodes=nodes, max_steps=STEPS, batch_size=4, learning_rate=2e-3, seed=7, save_steps=10
    )
    _, plain = run_to_completion(client, TRLConfig(**settings), base, chat_file)
    qat = TRLConfig(**settings, quantization_aware=QAT(group_size=32))
    client.apply_runtime(faulty_runtime("trl-qat", fault))
    name, quantized = run_to_completion(client, qat, base, chat_file, runtime="trl-qat")
    resumed = "resuming from" in "\n".join(client.get_job_logs(name, step="node-0"))
    assert resumed == (fault is not None)
    assert (quantized.message == "1 restart") == (fault is not None)
    assert plain.output is not None and quantized.output is not None

    tokenizer = AutoTokenizer.from_pretrained(Path(quantized.output) / "model")
    model = qat_model.load_quantized(Path(quantized.output) / "model")
    assert isinstance(model.model.layers[0].mlp.down_proj.weight, IntxUnpackedToInt8Tensor)
    assert isinstance(model.lm_head.weight, IntxUnpackedToInt8Tensor)
    before = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    trained = AutoModelForCausalLM.from_pretrained(
        Path(plain.output) / "model", dtype=torch.float32
    )
    losses = {"base": heldout_loss(before, tokenizer)}
    losses["fine-tuned"] = heldout_loss(trained, tokenizer)
    scheme = QAT().scheme
    ptq = qat_model.convert(qat_model.prepare(trained, scheme, 32), scheme, 32)
    losses["fine-tuned, then quantized"] = heldout_loss(ptq, tokenizer)  # no QAT: for the table
    losses["QAT, converted"] = heldout_loss(model, tokenizer)
    print(f"\nheld-out loss, tied={tied}, {nodes} node(s): {losses}")
    assert losses["fine-tuned"] < losses["base"] - 0.3, losses  # the fine-tune learnt
    assert abs(losses["QAT, converted"] - losses["fine-tuned"]) <= 0.05 * losses["fine-tuned"]
    steps = {p.step for p in client.get_job_metrics(name) if "loss" in p.values}
    first = 11 if fault else 1  # a restarted job's metrics are its last attempt's
    assert steps == set(range(first, STEPS + 1)), sorted(steps)
    checkpoint = Path(quantized.output) / "checkpoints" / f"checkpoint-{STEPS}"
    assert (checkpoint / "COMMITTED").is_file()  # the prepared model checkpoints
