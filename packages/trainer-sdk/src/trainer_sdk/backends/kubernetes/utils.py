"""Upstream's ``kubeflow.trainer.backends.kubernetes.utils``: the helpers its users call
(``update_trainjob_status`` from training code, ``get_tpu_num_nodes`` to size TPU jobs).

Needs no Kubernetes client."""

from __future__ import annotations

import math

from trainer_sdk.training.progress import update_trainjob_status

__all__ = ["get_tpu_num_nodes", "update_trainjob_status"]

DEFAULT_TPU_CHIPS_PER_HOST = 4


def _topology_dimensions(topology: str) -> list[int]:
    """``"2x2"`` or ``"2x2x4"`` as its positive dimensions; ValueError naming the topology."""
    if not topology:
        raise ValueError("topology: a TPU topology such as '2x2' or '2x2x2' is required")
    try:
        dimensions = [int(part) for part in topology.lower().split("x")]
    except ValueError:
        raise ValueError(
            f"topology: expected 'AxB' or 'AxBxC' (e.g. '2x2', '2x2x2'), got {topology!r}"
        ) from None
    if len(dimensions) not in (2, 3):
        raise ValueError(
            f"topology: expected 2 or 3 dimensions (e.g. '2x2', '2x2x2'), got {topology!r}"
        )
    if any(size <= 0 for size in dimensions):
        raise ValueError(f"topology: dimensions must be positive, got {topology!r}")
    return dimensions


def get_tpu_num_nodes(
    num_slices: int, topology: str, chips_per_host: int = DEFAULT_TPU_CHIPS_PER_HOST
) -> int:
    """The ``num_nodes`` (hosts) of a TrainJob spanning ``num_slices`` TPU slices of ``topology``.

    A slice smaller than one host takes one host; a larger slice must fill whole hosts."""
    if num_slices <= 0:
        raise ValueError(f"num_slices: must be positive, got {num_slices}")
    if chips_per_host <= 0:
        raise ValueError(f"chips_per_host: must be positive, got {chips_per_host}")
    chips = math.prod(_topology_dimensions(topology))
    if chips < chips_per_host:
        return num_slices
    if chips % chips_per_host:
        raise ValueError(
            f"topology: {topology!r} has {chips} chips per slice, which is not a multiple of "
            f"chips_per_host ({chips_per_host})"
        )
    return num_slices * (chips // chips_per_host)
