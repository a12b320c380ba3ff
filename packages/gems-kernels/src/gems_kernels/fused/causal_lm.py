"""``apply_gems(model)``: a Hugging Face-style causal LM computes its training loss with
:func:`~gems_kernels.fused.linear_cross_entropy` instead of ``lm_head`` + ``cross_entropy``.

The patch wraps the model's ``forward``: a call with ``labels`` runs the base model (the attribute
named by ``base_model_prefix``), shifts hidden states and labels by one token as the library's
causal-LM loss does, and returns the library's output class with the loss and ``logits=None``
(the point is never to build them). Calls without ``labels`` run the original forward. Duck
typed: nothing here imports ``transformers`` until a patched model is called.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from gems_kernels.fused.linear_cross_entropy import linear_cross_entropy

__all__ = ["apply_gems"]

# Head features the fused loss does not compute: scaled or soft-capped logits.
_UNSUPPORTED_CONFIG = ("final_logit_softcapping", "logit_scale")
# Arguments of the causal-LM head, not of the base model.
_HEAD_ONLY = ("labels", "logits_to_keep", "num_items_in_batch", "return_dict")


def _base_model(model: nn.Module) -> nn.Module:
    prefix = getattr(model, "base_model_prefix", None)
    base = getattr(model, prefix, None) if isinstance(prefix, str) else None
    if not isinstance(base, nn.Module):
        raise ValueError(
            f"apply_gems: {type(model).__name__} has no base model under base_model_prefix "
            f"({prefix!r}); expected a Hugging Face causal LM"
        )
    return base


def _head(model: nn.Module) -> nn.Linear:
    get = getattr(model, "get_output_embeddings", None)
    head = get() if callable(get) else None
    if not isinstance(head, nn.Linear):
        raise ValueError(
            f"apply_gems: {type(model).__name__}.get_output_embeddings() must be an nn.Linear "
            f"(the LM head), got {type(head).__name__}"
        )
    return head


def apply_gems(model: nn.Module, chunk_size: int = 4096) -> nn.Module:
    """Patch ``model`` (in place, and returned) to train with the chunked fused loss."""
    config = getattr(model, "config", None)
    for name in _UNSUPPORTED_CONFIG:
        if getattr(config, name, None) not in (None, 1.0):
            raise ValueError(f"apply_gems: config.{name} is set; the fused loss has no {name}")
    base, head = _base_model(model), _head(model)
    original = model.forward

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        labels = kwargs.get("labels")
        if labels is None:
            return original(*args, **kwargs)
        num_items = kwargs.get("num_items_in_batch")
        outputs = base(*args, **{k: v for k, v in kwargs.items() if k not in _HEAD_ONLY})
        hidden = outputs[0][:, :-1]
        shifted = labels[:, 1:].to(hidden.device)
        flat = hidden.reshape(-1, hidden.shape[-1])
        loss = linear_cross_entropy(
            flat,
            head.weight,
            shifted.reshape(-1),
            head.bias,
            reduction="mean" if num_items is None else "sum",
            chunk_size=chunk_size,
        )
        if num_items is not None:
            loss = loss / torch.as_tensor(num_items, device=loss.device)
        from transformers.modeling_outputs import CausalLMOutputWithPast

        return CausalLMOutputWithPast(
            loss=loss,
            logits=None,
            hidden_states=getattr(outputs, "hidden_states", None),
            attentions=getattr(outputs, "attentions", None),
        )

    model.forward = forward
    return model
