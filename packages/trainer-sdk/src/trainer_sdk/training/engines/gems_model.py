"""The TRL engine's ``--gems_kernels``: the model loaded as TRL loads it, then patched with gems'
fused kernels (``gems_kernels.fused.patch_hf_model``: RMSNorm, rotary, SwiGLU and the fused
linear + cross-entropy loss) before the trainer wraps it. On a CPU the kernels run under
Triton's interpreter (``TRITON_INTERPRET=1``, set here unless the job sets it)."""

from __future__ import annotations

import os
from typing import Any

from accelerate import PartialState  # type: ignore[import-untyped]
from trl.trainer.utils import create_model_from_path

__all__ = ["load_patched_model"]


def load_patched_model(path: str, training: Any) -> Any:
    """The model at ``path`` loaded with the TRL config ``training``'s ``model_init_kwargs``
    (which it clears: the trainer gets the model, not its path), on gems kernels; RuntimeError
    when gems_kernels is missing, ValueError (from the patch) for a model it does not fit."""
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
    return patch_hf_model(create_model_from_path(path, **init_kwargs))
