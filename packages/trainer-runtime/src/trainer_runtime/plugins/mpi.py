"""MPI: launcher and worker pods that reach each other over SSH, with a hostfile.

Node counts: ``numNodes`` counts every pod that runs ranks. With ``runLauncherAsNode`` the
launcher is one of them, so the ``node`` job gets ``numNodes - 1`` pods and, for ``numNodes: 1``,
is dropped with the launcher's dependency on it: the launcher runs alone (upstream keeps a
needless extra worker there). A ``runLauncherAsNode`` runtime with only a ``node`` job runs one
node; more than one node needs both jobs (refused at ``spec.trainer.numNodes``, as upstream).

Objects: the SSH Secret ``<job>-mpi-ssh-auth`` (ECDSA P-521 key from the injected generator,
immutable, built only while absent from the observed objects, so never regenerated) and the
hostfile ConfigMap ``<job>-mpi-hostfile``. The hostfile lists the launcher first when it runs
ranks, then the workers by pod index; its format and the launcher env per implementation
(Open MPI 4 and 5, Intel MPI, MPICH) come from ``mpi_runtime``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import mpi_runtime
import trainer_api
from trainer_api import FieldError, Trainer, TrainJob

from trainer_runtime import constants, manifests, podspecs, resources
from trainer_runtime.errors import BuildError
from trainer_runtime.info import PodSet, RuntimeInfo
from trainer_runtime.plan import Observed
from trainer_runtime.plugins._policies import (
    apply_trainer_env,
    reserved_env_errors,
    trainer_spec,
)

__all__ = ["MPI", "hostfile_config_map_name", "ssh_secret_name"]

SSH_AUTH_VOLUME: Final = "mpi-ssh-auth"
SSH_AUTH_SECRET_SUFFIX: Final = "-mpi-ssh-auth"
HOSTFILE_VOLUME: Final = "mpi-hostfile"
HOSTFILE_CONFIG_MAP_SUFFIX: Final = "-mpi-hostfile"
HOSTFILE_DIR: Final = "/etc/mpi"
HOSTFILE_NAME: Final = "hostfile"
HOSTFILE_MODE: Final = 0o444
# The SSH Secret volume's modes, as upstream's: owner read-only by default, the private key 0640
# and the public files 0644. ssh refuses a private key its own user can share, so for root
# without fsGroup ``mpi-launch`` and its workers use a 0600 copy (``mpi_runtime.private_identity``).
SSH_AUTH_DEFAULT_MODE: Final = 0o400
SSH_AUTH_ITEM_MODES: Final[Mapping[str, int]] = {
    mpi_runtime.SSH_SECRET_PRIVATE_KEY: 0o640,
    mpi_runtime.SSH_SECRET_PUBLIC_KEY: 0o644,
}
SECRET_TYPE_SSH_AUTH: Final = "kubernetes.io/ssh-auth"
DEFAULT_NUM_PROC_PER_NODE: Final = 1
DEFAULT_IMPLEMENTATION: Final = mpi_runtime.Implementation.OPENMPI
DEFAULT_SSH_AUTH_MOUNT_PATH: Final = "/root/.ssh"


def ssh_secret_name(job_name: str) -> str:
    """Name of the job's SSH Secret."""
    return job_name + SSH_AUTH_SECRET_SUFFIX


def hostfile_config_map_name(job_name: str) -> str:
    """Name of the job's hostfile ConfigMap."""
    return job_name + HOSTFILE_CONFIG_MAP_SUFFIX


@contextmanager
def _as_build_error(what: str) -> Iterator[None]:
    """Turn mpi_runtime's argument errors into a BuildError naming what was being made."""
    try:
        yield
    except mpi_runtime.MPIRuntimeError as error:
        raise BuildError(f"{what}: {error}") from error


@dataclass(frozen=True)
class _Policy:
    """``mlPolicy.mpi`` with upstream's defaults filled in."""

    num_proc_per_node: int
    implementation: mpi_runtime.Implementation
    ssh_auth_mount_path: str
    run_launcher_as_node: bool


def _policy(info: RuntimeInfo) -> _Policy | None:
    source = info.ml_policy.mpi
    if source is None:
        return None
    num_proc_per_node = source.num_proc_per_node
    return _Policy(
        num_proc_per_node=(
            DEFAULT_NUM_PROC_PER_NODE if num_proc_per_node is None else num_proc_per_node
        ),
        implementation=mpi_runtime.parse_implementation(source.mpi_implementation or ""),
        ssh_auth_mount_path=source.ssh_auth_mount_path or DEFAULT_SSH_AUTH_MOUNT_PATH,
        run_launcher_as_node=bool(source.run_launcher_as_node),
    )


class MPI:
    """Applies ``mlPolicy.mpi`` and builds the SSH Secret and hostfile ConfigMap."""

    name = "MPI"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """Pod sets present, no reserved launcher env in the trainer env (the implementation is
        one of the API's, which trainer_api checks)."""
        policy = _policy(info)
        if policy is None:
            return []
        errors = reserved_env_errors(
            job, mpi_runtime.reserved_env_names(policy.implementation), "MPI"
        )
        launcher, node = info.pod_set(constants.LAUNCHER), info.pod_set(trainer_api.NODE)
        num_nodes = _num_nodes(info, job)
        if policy.run_launcher_as_node:
            if num_nodes > 1 and (launcher is None or node is None):
                missing = trainer_api.NODE if node is None else constants.LAUNCHER
                errors.append(
                    FieldError(
                        "spec.trainer.numNodes",
                        f"must be 1: {info.runtime_kind} {info.runtime_name!r} runs the launcher "
                        f"as a node but has no {missing!r} replicated job",
                    )
                )
            return errors
        if launcher is None:
            errors.append(
                FieldError(
                    "spec.runtimeRef.name",
                    f"{info.runtime_kind} {info.runtime_name!r} has an MPI policy "
                    "but no 'launcher' replicated job",
                )
            )
        if num_nodes > 1 and node is None:
            errors.append(
                FieldError(
                    "spec.trainer.numNodes",
                    "must be 1: the runtime has no 'node' replicated job for workers",
                )
            )
        return errors

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Pod counts, slots, SSH and hostfile volumes, launcher env."""
        policy = _policy(info)
        if policy is None:
            return
        num_nodes = _num_nodes(info, job)
        launcher = info.pod_set(constants.LAUNCHER)
        node = info.pod_set(trainer_api.NODE)
        if launcher is not None:
            launcher.count = 1
        if node is not None:
            launcher_runs_ranks = policy.run_launcher_as_node and launcher is not None
            node.count = num_nodes - 1 if launcher_runs_ranks else num_nodes
            if node.count < 1:
                info.remove_pod_set(node)
        apply_trainer_env(info, job)
        slots = self._slots(info, policy, trainer_spec(job))
        if info.ml_policy.mpi is not None:  # the info's own copy: build and hostfile read it
            info.ml_policy.mpi.num_proc_per_node = slots
        for pod_set in (ps for ps in (node, launcher) if ps is not None and ps in info.pod_sets):
            self._mount(info, pod_set, policy, slots, is_launcher=pod_set is launcher)

    @staticmethod
    def _slots(info: RuntimeInfo, policy: _Policy, trainer: Trainer) -> int:
        if trainer.num_proc_per_node is not None:
            return trainer.num_proc_per_node
        slots = policy.num_proc_per_node
        container = info.trainer_container()
        gpus = resources.gpu_count(container.get("resources")) if container else 0
        return gpus if slots == 1 and gpus > 1 else slots

    @staticmethod
    def _mount(
        info: RuntimeInfo, pod_set: PodSet, policy: _Policy, slots: int, *, is_launcher: bool
    ) -> None:
        podspecs.upsert_volume(
            pod_set.pod_spec,
            {
                "name": SSH_AUTH_VOLUME,
                "secret": {
                    "secretName": ssh_secret_name(info.job_name),
                    "items": [
                        {"key": key, "path": path, "mode": SSH_AUTH_ITEM_MODES[key]}
                        for key, path in mpi_runtime.SSH_AUTH_FILES
                    ],
                    "defaultMode": SSH_AUTH_DEFAULT_MODE,
                },
            },
        )
        if is_launcher:
            podspecs.upsert_volume(
                pod_set.pod_spec,
                {
                    "name": HOSTFILE_VOLUME,
                    "configMap": {
                        "name": hostfile_config_map_name(info.job_name),
                        "items": [
                            {"key": HOSTFILE_NAME, "path": HOSTFILE_NAME, "mode": HOSTFILE_MODE}
                        ],
                    },
                },
            )
        for container in pod_set.containers:
            if container.get("name") not in (trainer_api.NODE, constants.LAUNCHER):
                continue
            podspecs.upsert_volume_mount(
                container, {"name": SSH_AUTH_VOLUME, "mountPath": policy.ssh_auth_mount_path}
            )
            if is_launcher:
                podspecs.upsert_volume_mount(
                    container, {"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR}
                )
                with _as_build_error("MPI launcher env"):
                    env = mpi_runtime.launcher_env(
                        policy.implementation, f"{HOSTFILE_DIR}/{HOSTFILE_NAME}", slots
                    )
                podspecs.upsert_env(
                    container, [podspecs.value_env(name, value) for name, value in env.items()]
                )

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The SSH Secret (only while it does not exist) and the hostfile ConfigMap."""
        if info.ml_policy.mpi is None:
            return []
        objects: list[dict[str, Any]] = []
        secret_name = ssh_secret_name(info.job_name)
        if observed.find("Secret", secret_name) is None:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": manifests.owned_metadata(job, secret_name),
                    "type": SECRET_TYPE_SSH_AUTH,
                    "immutable": True,
                    "stringData": mpi_runtime.ssh_secret_data(info.settings.ssh_keypair()),
                }
            )
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": manifests.owned_metadata(job, hostfile_config_map_name(info.job_name)),
                "data": {HOSTFILE_NAME: self.hostfile(info)},
            }
        )
        return objects

    @staticmethod
    def hostfile(info: RuntimeInfo) -> str:
        """The hostfile text: the launcher first when it runs ranks, then the workers."""
        policy = _policy(info)
        if policy is None:
            raise BuildError("MPI hostfile: the runtime has no mlPolicy.mpi")
        hosts: list[str] = []
        launcher = info.pod_set(constants.LAUNCHER)
        if policy.run_launcher_as_node and launcher is not None:
            hosts += launcher.endpoints(info.job_name, info.subdomain)
        node = info.pod_set(trainer_api.NODE)
        if node is not None:
            hosts += node.endpoints(info.job_name, info.subdomain)
        with _as_build_error("MPI hostfile"):
            return mpi_runtime.hostfile(hosts, policy.num_proc_per_node, policy.implementation)


def _num_nodes(info: RuntimeInfo, job: TrainJob) -> int:
    """``spec.trainer.numNodes``, else the runtime's ``mlPolicy.numNodes``, else 1."""
    return trainer_spec(job).num_nodes or info.ml_policy.num_nodes or 1
