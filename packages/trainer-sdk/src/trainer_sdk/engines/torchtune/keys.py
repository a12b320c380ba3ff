"""What the torchtune recipe reads from a config, importable without torch or torchtune (the
submit-time check of ``key=value`` overrides uses it)."""

from __future__ import annotations

from typing import Final

__all__ = ["RECIPE_KEYS", "TORCHTUNE_VERSION", "UNSUPPORTED_SETTINGS"]

# The torchtune release the recipe is written and tested against (trainer-sdk[torchtune] pins it).
TORCHTUNE_VERSION: Final = "0.6.1"

# Top-level config keys: those of torchtune's LLM fine-tuning configs, and save_every_n_steps.
RECIPE_KEYS: Final = frozenset(
    {
        "batch_size",
        "checkpointer",
        "clip_grad_norm",
        "collate_fn",
        "compile",
        "cudnn_deterministic_mode",
        "custom_sharded_layers",
        "dataset",
        "device",
        "dtype",
        "enable_activation_checkpointing",
        "enable_activation_offloading",
        "epochs",
        "fsdp_cpu_offload",
        "fsdp_reshard_after_forward",
        "gradient_accumulation_steps",
        "log_every_n_steps",
        "log_peak_memory_stats",
        "loss",
        "lr_scheduler",
        "max_steps_per_epoch",
        "metric_logger",
        "model",
        "optimizer",
        "optimizer_in_bwd",
        "output_dir",
        "profiler",
        "resume_from_checkpoint",
        "save_adapter_weights_only",
        "save_every_n_steps",
        "seed",
        "shuffle",
        "tokenizer",
    }
)

# Keys of torchtune's configs this recipe accepts only when off, and why.
UNSUPPORTED_SETTINGS: Final = {
    "optimizer_in_bwd": "must be false: this recipe steps the optimizer after backward",
    "enable_activation_offloading": "must be false: this recipe does not offload activations",
    "profiler.enabled": "must be false: this recipe does not run torchtune's profiler",
    "resume_from_checkpoint": (
        "must be false: this recipe resumes by itself from the job's checkpoint volume"
    ),
}
