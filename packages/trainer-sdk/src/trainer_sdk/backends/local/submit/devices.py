"""The accelerators this machine has, and the pods that ask for more than it has.

A cluster schedules a pod that requests ``nvidia.com/gpu: 2`` on a node with two GPUs and
torchrun's ``auto`` then starts two processes; on a machine without them ``auto`` would start one
per CPU core, a different job. So the local backend refuses such a pod up front, or, with
``LocalBackendConfig(accelerators_on_cpu=True)``, runs it on CPU with the process count the
cluster would run (one per requested device).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from trainer_sdk import constants
from trainer_sdk.backends.local.submit.pods import PodPlan
from trainer_sdk.status.runtimes import container_devices

__all__ = ["NVIDIA_GPUS", "device_shortfall", "nvidia_gpus", "on_cpu"]

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one directory per GPU the driver sees
# Devices (as container_devices names them) that are not the CPU; MIG slices are "mig-<profile>".
ACCELERATORS = {"gpu": constants.GPU_LABEL, "tpu": constants.TPU_LABEL, "npu": constants.NPU_LABEL}


def nvidia_gpus(environ: Mapping[str, str] | None = None, driver_dir: Path = NVIDIA_GPUS) -> int:
    """The NVIDIA GPUs this process may use: those the driver lists, limited by
    ``CUDA_VISIBLE_DEVICES`` (which CUDA reads up to its first invalid entry)."""
    environ = os.environ if environ is None else environ
    found = len(list(driver_dir.iterdir())) if driver_dir.is_dir() else 0
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return found
    entries = 0
    for entry in visible.split(","):
        if not entry.strip() or entry.strip().startswith("-"):
            break
        entries += 1
    return min(found, entries)


def _requests(plan: PodPlan) -> dict[tuple[str, int], list[str]]:
    """(resource, count per pod) -> the steps whose pods request that accelerator."""
    found: dict[tuple[str, int], list[str]] = {}
    for job, pods in plan:
        pod_spec = job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        for container in pod_spec.get("containers") or []:
            device, count = container_devices(container.get("resources")) or ("cpu", "0")
            if device not in ACCELERATORS and not device.startswith("mig-"):
                continue
            label = ACCELERATORS.get(device, f"nvidia.com/{device}")
            wanted = int(count) if count.isdigit() else 1
            found.setdefault((label, wanted), []).extend(pod.step for pod in pods)
    return found


def device_shortfall(plan: PodPlan, gpus: int) -> list[str]:
    """Why, per requested accelerator, this machine cannot run ``plan``'s pods as a cluster's
    nodes would (nothing when it can)."""
    short = []
    for (label, wanted), steps in _requests(plan).items():
        nvidia = label.startswith("nvidia.com/")
        if nvidia and gpus >= wanted:
            continue
        have = f"{gpus} NVIDIA GPU{'s' if gpus != 1 else ''} visible" if nvidia else f"no {label}"
        short.append(
            f"{', '.join(steps)} request{'s' if len(steps) == 1 else ''} {label}: {wanted} "
            f"per pod, but this machine has {have}"
        )
    return short


def on_cpu(plan: PodPlan) -> PodPlan:
    """``plan`` with pods requesting accelerators run on CPU: torchrun's ``auto`` becomes the
    requested device count (the processes a cluster's node starts), the step's device ``cpu``."""
    changed: PodPlan = []
    for job, pods in plan:
        requested = {
            step: wanted
            for (_, wanted), steps in _requests([(job, pods)]).items()
            for step in steps
        }
        placed = []
        for pod in pods:
            if pod.step not in requested:
                placed.append(pod)
                continue
            count = str(requested[pod.step])
            env = dict(pod.env)
            if env.get(constants.TORCH_ENV_NUM_PROC_PER_NODE) == "auto":
                env[constants.TORCH_ENV_NUM_PROC_PER_NODE] = count
            placed.append(
                dataclasses.replace(pod, env=env, device=constants.CPU_LABEL, device_count=count)
            )
        changed.append((job, placed))
    return changed
