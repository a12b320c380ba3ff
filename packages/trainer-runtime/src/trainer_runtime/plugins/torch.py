"""Torch: torchrun's ``PET_*`` env, the rendezvous port, and torchtune command lines.

Env order on the trainer container (upstream's): the user's ``spec.trainer.env``, then
``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK`` (the Job completion index),
``PET_MASTER_ADDR`` (``<job>-node-0-0.<subdomain>``) and ``PET_MASTER_PORT`` (29500). torchtune
jobs get the rendezvous endpoint in their command instead of the master address and port.

numProcPerNode: the TrainJob's integer (``trainer_api`` refuses anything else, as upstream's CRD
does: that rule lives there only), else ``auto``. ``auto`` stays ``auto`` when the node has a GPU
(torchrun then starts one process per GPU); otherwise it becomes the node's CPU request, else its
CPU limit, rounded up, and 1 when neither is set, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import trainer_api
from trainer_api import FieldError, TorchMLPolicySource, Trainer, TrainJob

from trainer_runtime import constants, podspecs, resources
from trainer_runtime.errors import BuildError
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins import _torchtune
from trainer_runtime.plugins._policies import (
    apply_trainer_env,
    apply_trainer_node_count,
    reserved_env_errors,
    trainer_spec,
)
from trainer_runtime.views import ContainerDoc

__all__ = ["RESERVED_ENV_NAMES", "Torch", "resolve_num_proc_per_node"]

PET_NNODES: Final = "PET_NNODES"
PET_NPROC_PER_NODE: Final = "PET_NPROC_PER_NODE"
PET_NODE_RANK: Final = "PET_NODE_RANK"
PET_MASTER_ADDR: Final = "PET_MASTER_ADDR"
PET_MASTER_PORT: Final = "PET_MASTER_PORT"
RESERVED_ENV_NAMES: Final = (
    PET_NNODES,
    PET_NPROC_PER_NODE,
    PET_NODE_RANK,
    PET_MASTER_ADDR,
    PET_MASTER_PORT,
)


def resolve_num_proc_per_node(
    requested: int | None, node_resources: Mapping[str, Any] | None
) -> str:
    """The ``PET_NPROC_PER_NODE`` value for ``requested`` (the TrainJob's integer, which
    ``trainer_api`` checks, or None) on a node with ``node_resources``."""
    if requested is not None:
        return str(requested)
    if resources.has_gpu(node_resources):
        return "auto"
    return str(resources.cpu_count(node_resources) or 1)


def _injection_targets(policy: TorchMLPolicySource) -> list[tuple[str, str]]:
    """(replicated job, container) pairs of ``envInjection``, in the order given."""
    targets = policy.env_injection.targets if policy.env_injection is not None else None
    return [(target.job_name, name) for target in targets or () for name in target.container_names]


def _injection_target(info: RuntimeInfo, job_name: str, name: str) -> ContainerDoc | None:
    """The container ``name`` of pod set ``job_name``: among containers, then init containers."""
    pod_set = info.pod_set(job_name)
    return pod_set.container_or_init_container(name) if pod_set is not None else None


def _missing_target(job_name: str, name: str) -> str:
    return (
        f'envInjection target podSet "{job_name}" container "{name}" not found in runtime template'
    )


class Torch:
    """Applies ``mlPolicy.torch``."""

    name = "Torch"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """envInjection targets present, reserved ``PET_*`` env, numProcPerNode, torchtune rules."""
        policy = info.ml_policy.torch
        if policy is None:
            return []
        trainer = trainer_spec(job)
        errors = [
            FieldError("spec.runtimeRef", _missing_target(job_name, name))
            for job_name, name in _injection_targets(policy)
            if _injection_target(info, job_name, name) is None
        ]
        errors += reserved_env_errors(job, RESERVED_ENV_NAMES, "torch")
        if _torchtune.is_torchtune(trainer):
            errors += _torchtune.validate(info.runtime_name, trainer)
        return errors

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Node count, user env then ``PET_*`` env, port 29500, envInjection targets."""
        policy = info.ml_policy.torch
        if policy is None:
            return
        num_nodes = apply_trainer_node_count(info, job)
        container = apply_trainer_env(info, job)
        trainer = trainer_spec(job)
        nproc = self._num_proc_per_node(info, trainer)
        env = [
            podspecs.value_env(PET_NNODES, str(num_nodes)),
            podspecs.value_env(PET_NPROC_PER_NODE, nproc),
            podspecs.field_ref_env(PET_NODE_RANK, constants.JOB_COMPLETION_INDEX_FIELD_PATH),
        ]
        master_env = [
            podspecs.value_env(
                PET_MASTER_ADDR, f"{info.job_name}-{trainer_api.NODE}-0-0.{info.subdomain}"
            ),
            podspecs.value_env(PET_MASTER_PORT, str(constants.CONTAINER_TRAINER_PORT)),
        ]
        if container is not None:
            if _torchtune.is_torchtune(trainer):
                container["command"] = _torchtune.command(
                    info.job_name,
                    info.runtime_name,
                    self._runtime_command(info),
                    num_nodes,
                    nproc,
                    resources.gpu_count(container.get("resources")),
                    list(trainer.args or ()),
                )
                podspecs.upsert_env(container, env)
            else:
                podspecs.upsert_env(container, env + master_env)
            podspecs.upsert_port(container, constants.CONTAINER_TRAINER_PORT)
        # Injected containers (sidecars, init containers doing preflight checks) always get the
        # master address and port, also in a torchtune job, whose trainer uses --rdzv_endpoint.
        for job_name, name in _injection_targets(policy):
            target = _injection_target(info, job_name, name)
            if target is None:
                raise BuildError(f"spec.runtimeRef: {_missing_target(job_name, name)}")
            if target is not container:
                podspecs.upsert_env(target, env + master_env)

    @staticmethod
    def _node_resources(info: RuntimeInfo) -> Mapping[str, Any] | None:
        container = info.trainer_container()
        return container.get("resources") if container else None

    def _num_proc_per_node(self, info: RuntimeInfo, trainer: Trainer) -> str:
        return resolve_num_proc_per_node(trainer.num_proc_per_node, self._node_resources(info))

    @staticmethod
    def _runtime_command(info: RuntimeInfo) -> list[str]:
        for job in info.runtime_spec.get("replicatedJobs") or ():
            labels = ((job.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(trainer_api.ANCESTOR_LABEL) != trainer_api.TRAINER_STEP:
                continue
            for container in (
                ((job.get("template") or {}).get("spec") or {}).get("template") or {}
            ).get("spec", {}).get("containers") or ():
                if container.get("name") == trainer_api.NODE:
                    return list(container.get("command") or ())
        return []
