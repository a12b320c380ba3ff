"""patch_hf_model on Hugging Face Llama, Qwen2 and Mistral built from configs (random weights):
in float32 the same loss and gradients as the unpatched model, both judged against the model in
float64, with RMSNorm, rotary, SwiGLU and the loss on gems (ATen's ops for them never run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from gems_kernels import fused
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

transformers = pytest.importorskip("transformers", reason="transformers is not installed")

VOCAB = 61
# ATen ops of the unpatched layers: rsqrt (RMSNorm), silu (SwiGLU), neg + cat (rotate_half),
# _log_softmax (the loss over the full logits).
UNPATCHED_OPS = ("rsqrt", "silu", "neg", "_log_softmax")
SIZES = dict(
    vocab_size=VOCAB, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
)  # fmt: skip


def _llama() -> nn.Module:
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**SIZES))


def _qwen2() -> nn.Module:
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**SIZES))


def _mistral() -> nn.Module:
    return transformers.MistralForCausalLM(transformers.MistralConfig(**SIZES, sliding_window=4))


class _AtenOps(TorchDispatchMode):
    """The base names of the ATen ops that run below autograd."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def _step(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> tuple[Any, dict[str, Any]]:
    model.zero_grad()
    loss = model(input_ids=ids, labels=labels).loss
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def _error(actual: torch.Tensor, reference: torch.Tensor, scale: float) -> float:
    return float((actual.double() - reference).abs().max()) / scale


@pytest.mark.parametrize("make", [_llama, _qwen2, _mistral], ids=["llama", "qwen2", "mistral"])
def test_patched_model_trains_as_the_model(make: Callable[[], nn.Module]) -> None:
    torch.manual_seed(0)
    model = make()
    reference = make().double()
    reference.load_state_dict(model.state_dict())
    ids = torch.randint(0, VOCAB, (2, 7))
    labels = ids.clone()
    labels[1, :2] = -100
    exact_loss, exact_grads = _step(reference, ids, labels)
    plain_loss, plain_grads = _step(model, ids, labels)
    fused.patch_hf_model(model, chunk_size=16)
    with _AtenOps() as trace:
        loss, grads = _step(model, ids, labels)
    assert not trace.names & set(UNPATCHED_OPS), trace.names & set(UNPATCHED_OPS)
    scale = max(float(g.abs().max()) for g in exact_grads.values())
    assert _error(loss, exact_loss, float(exact_loss)) <= 1e-5
    assert abs(float(loss) - float(plain_loss)) <= 1e-5 * float(exact_loss)
    for name, grad in grads.items():
        assert _error(grad, exact_grads[name], scale) <= 1e-5, name
        assert _error(grad, plain_grads[name].double(), scale) <= 1e-5, name


def test_patch_refuses_other_models() -> None:
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=16, n_layer=1, n_head=2)
    with pytest.raises(ValueError, match=r"config.model_type must be one of.*'gpt2'"):
        fused.patch_hf_model(transformers.GPT2LMHeadModel(config))
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SIZES, hidden_act="gelu"))
    with pytest.raises(ValueError, match=r"model.layers.0.mlp.act_fn must be SiLU"):
        fused.patch_hf_model(llama)
