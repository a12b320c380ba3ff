"""Fused operators with no single ATen counterpart (``gems_kernels.fused.silu_and_mul``)."""

from gems_kernels.fused.add_rms_norm import fused_add_rms_norm
from gems_kernels.fused.causal_lm import apply_gems
from gems_kernels.fused.gelu_and_mul import gelu_and_mul
from gems_kernels.fused.hf_patch import patch_hf_model
from gems_kernels.fused.linear_cross_entropy import linear_cross_entropy
from gems_kernels.fused.linear_log_probs import TokenLogProbs, linear_log_probs
from gems_kernels.fused.rotary_embedding import rotary_embedding
from gems_kernels.fused.silu_and_mul import silu_and_mul
from gems_kernels.fused.skip_layer_norm import skip_layer_norm

__all__ = [
    "TokenLogProbs",
    "apply_gems",
    "fused_add_rms_norm",
    "gelu_and_mul",
    "linear_cross_entropy",
    "linear_log_probs",
    "patch_hf_model",
    "rotary_embedding",
    "silu_and_mul",
    "skip_layer_norm",
]
