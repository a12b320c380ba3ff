"""The TRL engine's ``--gems_kernels``: the model loaded as TRL loads it, then patched with gems'
fused kernels (``gems_kernels.fused.patch_hf_model``: RMSNorm, rotary, SwiGLU and the fused
linear + cross-entropy loss) before the trainer wraps it; and TRL's chunked LM head, through
which its trainers compute the training loss, entropy and token accuracy, computed by gems'
``fused.linear_log_probs``. On a CPU the kernels run under Triton's interpreter
(``TRITON_INTERPRET=1``, set here unless the job sets it).

The head's seam is a private name of the pinned TRL 1.16: ``trl.trainer.utils.add_fused_lm_head``
calls ``_ChunkedLogProbFunction.apply(hidden, weight, bias, targets, temperature, chunk_size,
final_logit_softcapping, logit_scale, outputs)`` and unpacks five per-token fields. The module
attribute is replaced by :class:`GemsLogProbHead`, which takes the same call; a TRL without it
fails the job naming it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
import trl
import trl.trainer.utils as trl_utils
from accelerate import PartialState  # type: ignore[import-untyped]
from trl.trainer.utils import create_model_from_path

__all__ = ["SEAM", "GemsLogProbHead", "load_patched_model", "use_gems_head"]

SEAM = "trl.trainer.utils._ChunkedLogProbFunction"
_SEAM_NAME = SEAM.rsplit(".", 1)[1]


@functools.cache
def _announce(outputs: tuple[str, ...]) -> None:
    print(f"loss: TRL's LM head computed by gems' fused.linear_log_probs ({', '.join(outputs)})",
          flush=True)  # fmt: skip


class GemsLogProbHead:
    """TRL's chunked LM head computed by ``gems_kernels.fused.linear_log_probs``: the same call
    and the same five per-token fields (log-probs, entropy, log(sum p^2), mean logit, is-top-1);
    gems' blocks of 4096 vocabulary rows instead of TRL's ``chunk_size``."""

    @staticmethod
    def apply(
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        temperature: float,
        chunk_size: int,
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = ("log_probs",),
    ) -> tuple[torch.Tensor | None, ...]:
        from gems_kernels.fused import linear_log_probs

        if final_logit_softcapping is not None or logit_scale != 1.0:
            raise NotImplementedError(
                f"--gems_kernels: gems' LM head has no logit soft-capping or scaling; the model "
                f"asks for final_logit_softcapping={final_logit_softcapping}, "
                f"logit_scale={logit_scale}"
            )
        # products in the autocast dtype when autocast is on, as TRL's head computes them (gems
        # casts the head to the hidden states' dtype block by block, in forward and backward)
        device = hidden.device.type
        if torch.is_autocast_enabled(device):
            hidden = hidden.to(torch.get_autocast_dtype(device))
        result = linear_log_probs(
            hidden,
            weight,
            targets,
            bias,
            temperature,
            outputs=tuple(name for name in outputs if name != "log_probs"),
        )
        _announce(tuple(outputs))
        return (result.log_probs, result.entropy, result.log_sum_sq_probs, result.mean_logits,
                result.is_top1)  # fmt: skip


def use_gems_head() -> None:
    """TRL's trainers compute their loss through :class:`GemsLogProbHead` in this process;
    RuntimeError naming the seam when the installed TRL has none."""
    if not hasattr(trl_utils, _SEAM_NAME) or not hasattr(trl_utils, "add_fused_lm_head"):
        raise RuntimeError(
            f"--gems_kernels: trl {trl.__version__} has no {SEAM} (the LM head gems replaces); "
            "the engine is pinned to trl==1.16.0"
        )
    setattr(trl_utils, _SEAM_NAME, GemsLogProbHead)


def load_patched_model(path: str, training: Any) -> Any:
    """The model at ``path`` loaded with the TRL config ``training``'s ``model_init_kwargs``
    (which it clears: the trainer gets the model, not its path), on gems kernels; RuntimeError
    when gems_kernels or TRL's head seam is missing, ValueError (from the patch) for a model it
    does not fit; TRL's LM head runs on gems from then on (:func:`use_gems_head`)."""
    init_kwargs = {"trust_remote_code": training.trust_remote_code, **training.model_init_kwargs}
    training.model_init_kwargs = None
    if PartialState().device.type == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        from gems_kernels.fused import patch_hf_model
    except ImportError as error:
        raise RuntimeError(
            f"--gems_kernels: gems_kernels does not import ({error}); install it in the image: "
            'pip install "trainer-sdk[trl]" (or gems-kernels)'
        ) from error
    model = patch_hf_model(create_model_from_path(path, **init_kwargs))
    use_gems_head()
    return model
