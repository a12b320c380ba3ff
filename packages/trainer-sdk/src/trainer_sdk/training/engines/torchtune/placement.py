"""Where the recipe runs: the device, the process group, and the model's weights on it.

One process holds the whole model on its device; several shard it with FSDP2 over a process
group on the device's backend (gloo on CPU, NCCL and gloo on CUDA). Nothing here assumes CUDA: on
a machine without it, ``device: cuda`` (torchtune's configs) runs on the CPU, as the local backend
runs a pod that asks for GPUs with ``accelerators_on_cpu``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torchtune import training
from torchtune.modules.peft import DoRALinear, LoRALinear

__all__ = ["Placement", "full_state_dict", "load_weights", "place"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Placement:
    """This process's device, rank and world size."""

    device: torch.device
    rank: int
    world_size: int

    @property
    def sharded(self) -> bool:
        return self.world_size > 1

    @property
    def is_rank_zero(self) -> bool:
        return self.rank == 0


def _device(requested: str) -> torch.device:
    device = torch.device(requested)
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device: expected cpu or cuda, got {requested!r}")
    if device.type == "cpu":
        return device
    if not torch.cuda.is_available():
        log.warning("device %s: no CUDA device is visible here; training on the CPU", requested)
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def place(requested_device: str) -> Placement:
    """This process's placement; joins the process group when the launcher started several."""
    device = _device(requested_device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Placement(device, 0, 1)
    dist.init_process_group("gloo" if device.type == "cpu" else "cuda:nccl,cpu:gloo")
    return Placement(device, dist.get_rank(), dist.get_world_size())


def _is_layer(name: str, module: nn.Module, names: list[str] | None) -> bool:
    return bool(training.get_shard_conditions(name, module, names_to_match=names))


def _call_if_defined(module: nn.Module, method: str) -> None:
    """``module.method()`` where the module defines it (RoPE caches, DoRA magnitudes)."""
    found = getattr(module, method, None)
    if callable(found):
        found()


def load_weights(
    build: Callable[[], nn.Module],
    weights: Mapping[str, torch.Tensor],
    placement: Placement,
    dtype: torch.dtype,
    prepare: Callable[[nn.Module], None],
    sharding: Mapping[str, Any],
) -> tuple[nn.Module, list[str]]:
    """The model from ``build`` holding ``weights``, and the keys it has that ``weights`` lack
    (its adapters). One process builds it on its device; several build it on the meta device,
    shard it (``sharding``: ``custom_sharded_layers``, ``fsdp_cpu_offload``,
    ``fsdp_reshard_after_forward``) and load their shards. ``prepare`` (trainable parameters,
    activation checkpointing, compilation) runs before sharding."""
    if not placement.sharded:
        with training.set_default_dtype(dtype), placement.device:
            model = build()
        prepare(model)
        result = model.load_state_dict(weights, strict=False)
    else:
        with training.set_default_dtype(dtype), torch.device("meta"):
            model = build()
        prepare(model)
        cpu_offload = bool(sharding.get("fsdp_cpu_offload", False))
        training.shard_model(
            model=model,
            shard_conditions=[partial(_is_layer, names=sharding.get("custom_sharded_layers"))],
            cpu_offload=cpu_offload,
            reshard_after_forward=bool(sharding.get("fsdp_reshard_after_forward", True)),
        )
        with training.set_default_dtype(dtype), placement.device:
            for module in model.modules():  # what the checkpoint does not hold
                if isinstance(module, (LoRALinear, DoRALinear)):
                    module.to_empty(device="cpu" if cpu_offload else placement.device)
                    module.initialize_parameters()
                _call_if_defined(module, "rope_init")
        result = training.load_from_full_model_state_dict(
            model, dict(weights), placement.device, cpu_offload=cpu_offload
        )
        training.validate_no_params_on_meta_device(model)
    if result.unexpected_keys:
        raise ValueError(f"checkpoint: keys the model lacks: {result.unexpected_keys}")
    for module in model.modules():  # DoRA's magnitudes start as the loaded weights' norms
        _call_if_defined(module, "initialize_dora_magnitude")
    return model, list(result.missing_keys)


def full_state_dict(model: nn.Module, placement: Placement) -> dict[str, torch.Tensor]:
    """The model's whole state on the CPU, on rank 0 (empty elsewhere). Collective."""
    if placement.sharded:
        gathered: dict[str, torch.Tensor] = training.gather_cpu_state_dict(
            model, placement.is_rank_zero, device=placement.device
        )
        return gathered
    return {name: tensor.cpu() for name, tensor in model.state_dict().items()}
