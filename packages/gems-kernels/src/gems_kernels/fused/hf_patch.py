"""``patch_hf_model(model)``: a Hugging Face Llama, Qwen2 or Mistral causal LM trains on gems'
fused kernels: RMSNorm (``ops.rms_norm``), rotary embedding (``fused.rotary_embedding``), the
SwiGLU MLP (``fused.silu_and_mul``) and the causal-LM loss (``fused.apply_gems``: the fused
linear + cross-entropy, never the full logits).

RMSNorm and MLP modules are patched on the instance (their ``forward``); the rotary embedding is
a function of the model's modeling module that its attention calls, so it is replaced there, for
every model of that family in the process. Duck typed: nothing here imports ``transformers``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, Final

import torch
from torch import nn

from gems_kernels.fused.causal_lm import apply_gems
from gems_kernels.fused.rotary_embedding import rotary_embedding
from gems_kernels.fused.silu_and_mul import silu_and_mul
from gems_kernels.ops.rms_norm import rms_norm

__all__ = ["SUPPORTED_MODEL_TYPES", "patch_hf_model"]

SUPPORTED_MODEL_TYPES: Final = ("llama", "qwen2", "mistral")
# The modeling modules whose rotary function is already gems', with the function they had.
_ORIGINAL_ROTARY: dict[str, Callable[..., Any]] = {}


def _rms_norm_forward(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
    weight: torch.Tensor = self.weight
    return rms_norm(hidden_states, weight.shape, weight, float(self.variance_epsilon))


def _swiglu_forward(self: Any, x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = self.down_proj(silu_and_mul(self.gate_proj(x), self.up_proj(x)))
    return out


def _rotary(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, unsqueeze_dim: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """The models' ``apply_rotary_pos_emb``: their cos/sin repeat one half-size table twice."""
    half = cos.shape[-1] // 2
    cos, sin = cos[..., :half].unsqueeze(unsqueeze_dim), sin[..., :half].unsqueeze(unsqueeze_dim)
    return rotary_embedding(q, cos, sin), rotary_embedding(k, cos, sin)


def _is_silu(act_fn: object) -> bool:
    return isinstance(act_fn, nn.SiLU) or type(act_fn).__name__ == "SiLUActivation"


def _patch_rotary(model: nn.Module) -> None:
    module = sys.modules[type(model).__module__]
    if module.__name__ in _ORIGINAL_ROTARY:
        return
    original = getattr(module, "apply_rotary_pos_emb", None)
    if not callable(original):
        raise ValueError(
            f"patch_hf_model: {module.__name__} has no apply_rotary_pos_emb to replace"
        )
    _ORIGINAL_ROTARY[module.__name__] = original
    module.apply_rotary_pos_emb = _rotary  # type: ignore[attr-defined]


def patch_hf_model(model: nn.Module, chunk_size: int = 4096) -> nn.Module:
    """Patch ``model`` (a ``LlamaForCausalLM``, ``Qwen2ForCausalLM`` or ``MistralForCausalLM``)
    in place, and return it; ValueError names what does not fit."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"patch_hf_model: config.model_type must be one of {list(SUPPORTED_MODEL_TYPES)}, "
            f"got {model_type!r} ({type(model).__name__})"
        )
    for name, module in model.named_modules():
        if type(module).__name__.endswith("RMSNorm"):
            module.forward = types.MethodType(_rms_norm_forward, module)
        elif type(module).__name__.endswith("MLP"):
            if not _is_silu(getattr(module, "act_fn", None)):
                raise ValueError(
                    f"patch_hf_model: {name}.act_fn must be SiLU (config.hidden_act='silu') for "
                    f"the SwiGLU kernel, got {type(getattr(module, 'act_fn', None)).__name__}"
                )
            module.forward = types.MethodType(_swiglu_forward, module)
    _patch_rotary(model)
    return apply_gems(model, chunk_size=chunk_size)
