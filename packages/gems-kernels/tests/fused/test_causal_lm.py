"""apply_gems on Hugging Face causal LMs built from configs (random weights): the same loss and
gradients as the model's own lm_head + cross_entropy, with no logits (issue 27)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from gems_kernels import fused
from torch import nn

transformers = pytest.importorskip("transformers", reason="transformers is not installed")


def _llama() -> nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=97, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config)


def _gpt2() -> nn.Module:
    config = transformers.GPT2Config(
        vocab_size=97, n_embd=16, n_layer=1, n_head=2, n_positions=32, bos_token_id=0,
        eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _step(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> tuple[Any, ...]:
    model.zero_grad()
    out = model(input_ids=ids, labels=labels)
    out.loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out, grads


@pytest.mark.parametrize("make", [_llama, _gpt2], ids=["llama", "gpt2"])
def test_patched_loss_and_gradients_match_the_model(make: Any) -> None:
    torch.manual_seed(0)
    model = make().double()  # float64 on both sides: the comparison is of the formulas
    ids = torch.randint(0, 97, (2, 9))
    labels = ids.clone()
    labels[0, :3] = -100
    expected, expected_grads = _step(model, ids, labels)
    fused.apply_gems(model, chunk_size=10)
    actual, grads = _step(model, ids, labels)
    assert actual.logits is None and expected.logits is not None
    # the library casts the logits to float32 for its loss; the fused loss keeps float64
    torch.testing.assert_close(actual.loss.float(), expected.loss, rtol=1e-6, atol=1e-7)
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name], rtol=1e-5, atol=1e-7, msg=name)
    plain = model(input_ids=ids)  # without labels: the original forward, with logits
    assert plain.logits.shape == (2, 9, 97)


def test_apply_gems_refuses_what_it_cannot_compute() -> None:
    with pytest.raises(ValueError, match="no base model under base_model_prefix"):
        fused.apply_gems(nn.Linear(2, 2))
    model = _llama()
    model.config.final_logit_softcapping = 30.0
    with pytest.raises(ValueError, match=r"config\.final_logit_softcapping is set"):
        fused.apply_gems(model)
