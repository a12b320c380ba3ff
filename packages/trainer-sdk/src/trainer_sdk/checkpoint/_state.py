"""What a training state holds, and how each kind of value is saved and restored.

A state is a mapping of names to values:

- ``torch.nn.Module`` (plain, DDP, FSDP2 or tensor-parallel) and ``torch.optim.Optimizer``:
  through ``torch.distributed.checkpoint.state_dict`` into one DCP checkpoint, so sharded
  parameters are saved by the ranks that hold them and can be loaded at another world size;
- a mapping of tensors (a plain ``state_dict``): into the same DCP checkpoint;
- a DeepSpeed engine (it has ``save_checkpoint`` and ``load_checkpoint``): through its own
  methods, into the checkpoint's ``deepspeed/`` directory;
- anything else with ``state_dict()`` and ``load_state_dict()`` (an LR scheduler, a
  ``CacheDataset``, a step counter of your own): per rank, with that rank's RNG states.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn
from torch.distributed.checkpoint import state_dict as dcp_state_dict

from trainer_sdk.checkpoint import _formats

__all__ = [
    "DeepSpeedEngine",
    "Parts",
    "Stateful",
    "load_rank_part",
    "rank_part",
    "restore_tensor_parts",
    "save_rank_part",
    "split",
    "tensor_state",
]

DEEPSPEED_DIR = "deepspeed"
DEEPSPEED_TAG = "state"
TENSORS_DIR = "tensors"


@runtime_checkable
class Stateful(Protocol):
    """An object whose state round-trips through a dict."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> Any: ...


@runtime_checkable
class DeepSpeedEngine(Protocol):
    """The part of ``deepspeed.DeepSpeedEngine`` a checkpoint uses."""

    def save_checkpoint(self, save_dir: str, tag: str | None = None) -> Any: ...

    def load_checkpoint(self, load_dir: str, tag: str | None = None) -> Any: ...


@dataclass
class Parts:
    """A state sorted by how each value is saved."""

    modules: dict[str, nn.Module] = field(default_factory=dict)
    optimizers: dict[str, tuple[nn.Module, torch.optim.Optimizer]] = field(default_factory=dict)
    tensors: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    engines: dict[str, DeepSpeedEngine] = field(default_factory=dict)
    objects: dict[str, Stateful] = field(default_factory=dict)


def _owner(
    name: str, optimizer: torch.optim.Optimizer, modules: Mapping[str, nn.Module]
) -> nn.Module:
    params = {id(p) for group in optimizer.param_groups for p in group["params"]}
    for module in modules.values():
        if any(id(p) in params for p in module.parameters()):
            return module
    raise TypeError(
        f"state[{name!r}]: an optimizer needs the module it optimizes in the same state; "
        "no nn.Module there owns its parameters"
    )


def split(state: Mapping[str, Any]) -> Parts:
    """Sort ``state``'s values into parts; a value of no known kind is a TypeError naming it."""
    if not isinstance(state, Mapping) or not state:
        raise TypeError("state: expected a non-empty mapping of names to modules, optimizers, ...")
    parts = Parts()
    optimizers = {}
    for name, value in state.items():
        if not isinstance(name, str) or not name or "/" in name or "." in name:
            raise TypeError(f"state: expected names without '/' or '.', got {name!r}")
        if isinstance(value, DeepSpeedEngine):
            parts.engines[name] = value
        elif isinstance(value, nn.Module):
            parts.modules[name] = value
        elif isinstance(value, torch.optim.Optimizer):
            optimizers[name] = value
        elif isinstance(value, Stateful):
            parts.objects[name] = value
        elif isinstance(value, Mapping):
            parts.tensors[name] = value
        else:
            raise TypeError(
                f"state[{name!r}]: expected an nn.Module, an Optimizer, a DeepSpeed engine, a "
                "mapping of tensors or an object with state_dict()/load_state_dict(), got "
                f"{type(value).__name__}"
            )
    for name, optimizer in optimizers.items():
        parts.optimizers[name] = (_owner(name, optimizer, parts.modules), optimizer)
    return parts


def tensor_state(parts: Parts) -> dict[str, Any]:
    """The DCP state dict of the modules, optimizers and tensor mappings."""
    state: dict[str, Any] = {
        name: dcp_state_dict.get_model_state_dict(module) for name, module in parts.modules.items()
    }
    for name, (module, optimizer) in parts.optimizers.items():
        state[name] = dcp_state_dict.get_optimizer_state_dict(module, optimizer)
    state.update({name: dict(tensors) for name, tensors in parts.tensors.items()})
    return state


def restore_tensor_parts(parts: Parts, loaded: Mapping[str, Any]) -> None:
    """Put a loaded ``tensor_state`` back into the modules, optimizers and tensor mappings."""
    for name, module in parts.modules.items():
        dcp_state_dict.set_model_state_dict(module, loaded[name])
    for name, (module, optimizer) in parts.optimizers.items():
        dcp_state_dict.set_optimizer_state_dict(module, optimizer, loaded[name])
    for name, tensors in parts.tensors.items():
        if isinstance(tensors, dict):
            tensors.update(loaded[name])


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    cuda_in_use = torch.cuda.is_available() and torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    if cuda_in_use:
        state["cuda"] = torch.cuda.get_rng_state_all()
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # as plain values: (kind, keys, position, has_gauss, cached_gaussian)
        kind, keys, *rest = numpy.random.get_state()
        state["numpy"] = (kind, keys.tolist(), *rest)
    return state


def _set_rng_state(state: Mapping[str, Any]) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    numpy = sys.modules.get("numpy")
    if "numpy" in state and numpy is not None:
        kind, keys, *rest = state["numpy"]
        numpy.random.set_state((kind, numpy.array(keys, dtype=numpy.uint32), *rest))


def rank_part(parts: Parts) -> dict[str, Any]:
    """This rank's RNG states and objects' state dicts, as saved; TypeError naming the value if
    they, or a tensor mapping, hold anything but tensors and plain values (a checkpoint is
    read back without unpickling objects)."""
    objects = {name: value.state_dict() for name, value in parts.objects.items()}
    for name, value in objects.items():
        _formats.check_plain(value, f"state[{name!r}].state_dict()")
    for name, tensors in parts.tensors.items():
        _formats.check_plain(tensors, f"state[{name!r}]")
    return {"rng": _rng_state(), "objects": objects}


def save_rank_part(path: Path, part: Mapping[str, Any]) -> None:
    """Write this rank's ``rank_part`` to ``path`` (whole or not at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    torch.save(dict(part), temporary)
    os.replace(temporary, path)


def load_rank_part(path: Path, parts: Parts) -> None:
    """Restore this rank's RNG states and objects from ``path``."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: this rank's part of the checkpoint is missing; was it saved by fewer "
            "ranks than this job runs?"
        )
    part = _formats.load_plain(path)
    if not isinstance(part, dict) or not isinstance(part.get("objects"), dict):
        raise ValueError(f"{path}: not a rank part of a checkpoint")
    missing = sorted(set(parts.objects) - set(part["objects"]))
    if missing:
        raise KeyError(f"{path}: holds no state for {', '.join(missing)}")
    for name, value in parts.objects.items():
        value.load_state_dict(part["objects"][name])
    _set_rng_state(part["rng"])
