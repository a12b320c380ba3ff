"""Flux: the trainer's nodes form one Flux Framework instance that runs the command across them.

The trainer image needs no Flux: an init container ``flux-installer`` (the flux-view image
named by ``FLUX_VIEW_IMAGE``) copies a Flux install into an emptyDir shared with the trainer
container. The trainer container's command and args become the arguments of the ConfigMap's
``entrypoint.sh``: every node starts a broker, and the first node's broker runs
``flux run -N <nodes> -n <nodes x numProcPerNode> [-g <GPUs per task>] <command>``; with no
command, the first broker stays up for interactive use (``flux proxy``).

Settings come from literal env values of the ``node`` container (runtime, then TrainJob):
``FLUX_VIEW_IMAGE``, ``FLUX_NETWORK_DEVICE`` and ``FLUX_QUEUE_POLICY``. ``numProcPerNode``
(TrainJob, else the policy, default 1) is the number of cores each node offers Flux.

Objects: the ConfigMap ``<job>-flux-entrypoint`` (``init.sh``, ``entrypoint.sh``; the broker
configuration is in ``init.sh``) and the Secret ``<job>-flux-curve`` with the brokers' CURVE
certificate (a random X25519 key from ``Settings.curve_keypair``, immutable, built only while
absent from the observed objects, so never regenerated).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from trainer_api import FieldError, TrainJob

from trainer_runtime import curve, manifests, podspecs, resources
from trainer_runtime.info import PodSet, RuntimeInfo
from trainer_runtime.plan import Observed
from trainer_runtime.plugins import _flux_scripts as scripts
from trainer_runtime.plugins._policies import (
    apply_trainer_env,
    apply_trainer_node_count,
    trainer_spec,
)
from trainer_runtime.views import VolumeDoc, VolumeMountDoc

__all__ = ["DEFAULT_SETTINGS", "Flux", "curve_secret_name", "entrypoint_config_map_name"]

VIEW_IMAGE: Final = "FLUX_VIEW_IMAGE"
NETWORK_DEVICE: Final = "FLUX_NETWORK_DEVICE"
QUEUE_POLICY: Final = "FLUX_QUEUE_POLICY"
DEFAULT_SETTINGS: Final[Mapping[str, str]] = {
    VIEW_IMAGE: "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
    NETWORK_DEVICE: "eth0",
    QUEUE_POLICY: "fcfs",
}
QUEUE_POLICIES: Final = ("fcfs", "easy", "hybrid", "conservative")
_NO_SPACE: Final = re.compile(r"^\S+$")
_DEVICE: Final = re.compile(r"^[A-Za-z0-9_.:*-]+$")
# What each setting accepts, and the message when it does not.
_SETTING_RULES: Final[Mapping[str, tuple[Callable[[str], bool], str]]] = {
    VIEW_IMAGE: (lambda v: bool(_NO_SPACE.match(v)), "must be an image reference"),
    NETWORK_DEVICE: (
        lambda v: bool(_DEVICE.match(v)),
        "must be a network interface name such as eth0",
    ),
    QUEUE_POLICY: (lambda v: v in QUEUE_POLICIES, f"must be one of {', '.join(QUEUE_POLICIES)}"),
}

INSTALLER: Final = "flux-installer"
INSTALL_VOLUME: Final = "flux-install"
SOFTWARE_VOLUME: Final = "spack-install"
CONFIG_VOLUME: Final = "flux-config"
CURVE_VOLUME: Final = "flux-curve"
SHM_VOLUME: Final = "dshm"
SHM_MOUNT: Final = "/dev/shm"
SCRIPT_MODE: Final = 0o755
CURVE_MODE: Final = 0o400
ENTRYPOINT_SUFFIX: Final = "-flux-entrypoint"
CURVE_SUFFIX: Final = "-flux-curve"


def entrypoint_config_map_name(job_name: str) -> str:
    """Name of the job's ConfigMap with ``init.sh`` and ``entrypoint.sh``."""
    return job_name + ENTRYPOINT_SUFFIX


def curve_secret_name(job_name: str) -> str:
    """Name of the job's Secret with the brokers' CURVE certificate."""
    return job_name + CURVE_SUFFIX


def _settings(env: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The defaults overridden by literal values in ``env`` (later entries win)."""
    settings = dict(DEFAULT_SETTINGS)
    for var in env:
        if var.get("name") in settings and var.get("value") is not None:
            settings[var["name"]] = str(var["value"])
    return settings


def _setting_errors(env: Iterable[Mapping[str, Any]], path: str) -> list[FieldError]:
    errors = []
    for index, var in enumerate(env):
        name = str(var.get("name"))
        if name not in _SETTING_RULES:
            continue
        accepts, expected = _SETTING_RULES[name]
        if var.get("valueFrom") is not None or var.get("value") is None:
            errors.append(
                FieldError(
                    f"{path}[{index}]",
                    f"{name} must have a literal value: the controller reads it to build the "
                    "Flux pods",
                )
            )
        elif not accepts(str(var["value"])):
            errors.append(
                FieldError(f"{path}[{index}].value", f"{name} {expected}, got {var['value']!r}")
            )
    return errors


def _pod_spec_path(info: RuntimeInfo, pod_set: PodSet) -> str:
    """The runtime field path of a pod set's pod spec."""
    index = next(i for i, job in enumerate(info.spec["replicatedJobs"]) if job is pod_set.job)
    return f"spec.template.spec.replicatedJobs[{index}].template.spec.template.spec"


def _procs_per_node(info: RuntimeInfo, job: TrainJob) -> int:
    value = trainer_spec(job).num_proc_per_node
    if value is None and info.ml_policy.flux is not None:
        value = info.ml_policy.flux.num_proc_per_node
    return 1 if value is None else value


class Flux:
    """Applies ``mlPolicy.flux``; builds the scripts ConfigMap and the CURVE Secret."""

    name = "Flux"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """A trainer ``node`` container with a command to wrap, host names, settings, procs."""
        if info.ml_policy.flux is None:
            return []
        trainer = trainer_spec(job)
        errors: list[FieldError] = []
        if _procs_per_node(info, job) < 1:
            path = (
                "spec.trainer.numProcPerNode"
                if trainer.num_proc_per_node is not None
                else "spec.mlPolicy.flux.numProcPerNode"
            )
            errors.append(FieldError(path, "must be at least 1 for a Flux runtime"))
        pod_set = info.trainer_pod_set()
        container = info.trainer_container()
        if pod_set is None or container is None:
            return [
                *errors,
                FieldError(
                    "spec.runtimeRef.name",
                    f"{info.runtime_kind} {info.runtime_name!r} has a Flux policy but no "
                    "trainer replicated job with a 'node' container",
                ),
            ]
        if (info.spec.get("network") or {}).get("enableDNSHostnames") is False:
            errors.append(
                FieldError(
                    "spec.runtimeRef.name",
                    f"{info.runtime_kind} {info.runtime_name!r} sets network.enableDNSHostnames "
                    "to false, but Flux brokers reach each other by pod host name",
                )
            )
        pod_path = _pod_spec_path(info, pod_set)
        for index, init in enumerate(pod_set.pod_spec.get("initContainers") or ()):
            if init.get("name") == INSTALLER:
                errors.append(
                    FieldError(
                        f"{pod_path}.initContainers[{index}].name",
                        f"{INSTALLER!r} is reserved for the Flux installer (set by the runtime "
                        "or a runtimePatch)",
                    )
                )
        command = trainer.command or container.get("command")
        if (trainer.args or container.get("args")) and not command:
            errors.append(
                FieldError(
                    "spec.trainer.command",
                    "must be set with args for a Flux runtime: the image's entrypoint cannot be "
                    "run under flux run",
                )
            )
        index = pod_set.containers.index(container)
        errors += _setting_errors(container.get("env") or (), f"{pod_path}.containers[{index}].env")
        errors += _setting_errors([var.to_dict() for var in trainer.env or ()], "spec.trainer.env")
        return errors

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Node count, user env, the installer, the volumes, and the wrapped command."""
        if info.ml_policy.flux is None:
            return
        apply_trainer_node_count(info, job)
        container = apply_trainer_env(info, job)
        pod_set = info.trainer_pod_set()
        if container is None or pod_set is None:
            return
        settings = _settings(container.get("env") or ())
        command = [*(container.get("command") or ()), *(container.get("args") or ())]
        container["command"] = ["/bin/bash", f"{scripts.CONFIG_MOUNT}/{scripts.ENTRYPOINT}"]
        container["command"] += command
        container.pop("args", None)
        self._add_volumes(info, pod_set)
        podspecs.upsert_init_container(
            pod_set.pod_spec,
            {
                "name": INSTALLER,
                "image": settings[VIEW_IMAGE],
                "command": ["/bin/bash", f"{scripts.CONFIG_MOUNT}/{scripts.INIT}"],
                "volumeMounts": [
                    {"name": INSTALL_VOLUME, "mountPath": scripts.INSTALL_MOUNT},
                    {"name": CONFIG_VOLUME, "mountPath": scripts.CONFIG_MOUNT, "readOnly": True},
                ],
            },
        )
        mounts: tuple[VolumeMountDoc, ...] = (
            {"name": INSTALL_VOLUME, "mountPath": scripts.INSTALL_MOUNT},
            {"name": SOFTWARE_VOLUME, "mountPath": scripts.SOFTWARE_MOUNT},
            {"name": CONFIG_VOLUME, "mountPath": scripts.CONFIG_MOUNT, "readOnly": True},
            {"name": CURVE_VOLUME, "mountPath": scripts.CURVE_MOUNT, "readOnly": True},
            {"name": SHM_VOLUME, "mountPath": SHM_MOUNT},
        )
        for mount in mounts:
            podspecs.upsert_volume_mount(container, mount)

    @staticmethod
    def _add_volumes(info: RuntimeInfo, pod_set: PodSet) -> None:
        volumes: tuple[VolumeDoc, ...] = (
            {"name": SOFTWARE_VOLUME, "emptyDir": {}},
            {"name": INSTALL_VOLUME, "emptyDir": {}},
            {
                "name": CONFIG_VOLUME,
                "configMap": {
                    "name": entrypoint_config_map_name(info.job_name),
                    "defaultMode": SCRIPT_MODE,
                },
            },
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}},
            {
                "name": CURVE_VOLUME,
                "secret": {
                    "secretName": curve_secret_name(info.job_name),
                    "defaultMode": CURVE_MODE,
                },
            },
        )
        for volume in volumes:
            podspecs.upsert_volume(pod_set.pod_spec, volume)

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The scripts ConfigMap, and the CURVE Secret while it does not exist."""
        pod_set = info.trainer_pod_set()
        container = info.trainer_container()
        if info.ml_policy.flux is None or pod_set is None or container is None:
            return []
        objects: list[dict[str, Any]] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": manifests.owned_metadata(
                    job, entrypoint_config_map_name(info.job_name)
                ),
                "data": _scripts(info, job, pod_set, container),
            }
        ]
        secret_name = curve_secret_name(info.job_name)
        if observed.find("Secret", secret_name) is None:
            certificate = curve.curve_certificate(info.job_name, info.settings.curve_keypair())
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": manifests.owned_metadata(job, secret_name),
                    "type": "Opaque",
                    "immutable": True,
                    "stringData": {scripts.CURVE_FILE: certificate},
                }
            )
        return objects


def _scripts(
    info: RuntimeInfo, job: TrainJob, pod_set: PodSet, container: Mapping[str, Any]
) -> dict[str, str]:
    """``init.sh`` and ``entrypoint.sh`` for the trainer's nodes (after enforce_ml_policy)."""
    settings = _settings(container.get("env") or ())
    nodes = pod_set.count
    procs = _procs_per_node(info, job)
    gpus = resources.gpu_count(container.get("resources"))
    prefix = f"{info.job_name}-{pod_set.name}-0-"
    hostlist = f"{prefix}[{scripts.index_range(nodes)}]"
    node_resources = [f"--cores={scripts.index_range(procs)}"]
    run_flags = ["-N", str(nodes), "-n", str(nodes * procs)]
    if gpus:
        node_resources.append(f"--gpu={scripts.index_range(gpus)}")
        if gpus >= procs:
            run_flags += ["-g", str(gpus // procs)]
    broker = scripts.broker_config(
        hostlist, info.subdomain, settings[NETWORK_DEVICE], settings[QUEUE_POLICY]
    )
    return {
        scripts.ENTRYPOINT: scripts.entrypoint_script(
            f"{prefix}0", hostlist, node_resources, run_flags
        ),
        scripts.INIT: scripts.init_script(broker),
    }
