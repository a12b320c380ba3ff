"""The Kubernetes backend: TrainJob custom resources sent with the ``kubernetes`` client."""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, cast

from trainer_api.kubeconfig import InCluster, KubeconfigError, find_connection

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, RuntimeBackend
from trainer_sdk.backends.local.submit.pods import step_name
from trainer_sdk.configs import KubernetesBackendConfig
from trainer_sdk.errors import InvalidTrainJobError, JobNotFoundError
from trainer_sdk.manifests import storage
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest, generate_name
from trainer_sdk.options import Option
from trainer_sdk.status.jobs import PodView, to_train_job
from trainer_sdk.status.outputs import cluster_output
from trainer_sdk.status.runtimes import container_devices, runtime_from_manifest

__all__ = [
    "KubernetesBackend",
    "admission_warnings",
    "pod_view",
    "print_packages",
]

_logger = logging.getLogger(__name__)
# RFC 7234 warn-text in the API server's ``Warning: 299 - "text"`` headers (joined by ", ").
_WARNING_TEXT = re.compile(r'299 [^ ]+ "((?:[^"\\]|\\.)*)"')


def admission_warnings(header: str | None) -> list[str]:
    """The texts of the API server's ``Warning`` header (admission webhook warnings)."""
    return [re.sub(r"\\(.)", r"\1", text) for text in _WARNING_TEXT.findall(header or "")]


def pod_view(pod: dict[str, Any], has_launcher: bool) -> PodView | None:
    """A pod manifest of a TrainJob as the SDK's step, or None for pods of other replicated jobs."""
    labels = pod.get("metadata", {}).get("labels") or {}
    replicated_job = labels.get(constants.JOBSET_RJOB_NAME_LABEL)
    if replicated_job not in (
        constants.DATASET_INITIALIZER,
        constants.MODEL_INITIALIZER,
        constants.LAUNCHER,
        constants.NODE,
    ):
        return None
    job_index = int(labels.get(constants.JOBSET_JOB_INDEX_LABEL, 0))
    annotations = pod.get("metadata", {}).get("annotations") or {}
    pod_index = int(
        annotations.get(constants.JOB_INDEX_LABEL, labels.get(constants.JOB_INDEX_LABEL, 0))
    )
    offset = 1 if has_launcher and replicated_job == constants.NODE else 0
    step = step_name(replicated_job, job_index, pod_index, 1, offset)
    containers = pod.get("spec", {}).get("containers") or []
    container = next(
        (c for c in containers if c.get("name") in (replicated_job, constants.NODE)),
        containers[0] if containers else {},
    )
    device, count = container_devices(container.get("resources")) or (
        constants.UNKNOWN,
        constants.UNKNOWN,
    )
    for variable in container.get("env") or []:
        if (
            variable.get("name") == constants.TORCH_ENV_NUM_PROC_PER_NODE
            and str(variable.get("value", "")).isdigit()
        ):
            count = str(variable["value"])
    phase = (pod.get("status") or {}).get("phase") or constants.POD_PENDING
    return PodView(pod.get("metadata", {}).get("name", ""), step, phase, device, count)


def print_packages() -> None:
    """Run in the runtime's trainer image: its Python, its packages and, with GPUs, nvidia-smi."""
    import shutil
    import subprocess
    import sys

    print(f"Python: {sys.version}")
    if shutil.which("pip"):
        print(subprocess.run(["pip", "list"], capture_output=True, text=True).stdout)
    else:
        print("Unable to get installed packages: pip command not found")
    if shutil.which("nvidia-smi"):
        print("Available GPUs on the single training node")
        print(subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout)


class KubernetesBackend(RuntimeBackend):
    """TrainJobs in a cluster running the Kubeflow Trainer controller or this project's."""

    def __init__(self, config: KubernetesBackendConfig | None = None) -> None:
        try:
            from kubernetes import client
            from kubernetes import config as kube_config
        except ImportError as error:
            raise ImportError(
                "the Kubernetes backend needs the kubernetes client: "
                "pip install 'trainer-sdk[kubernetes]' (the local backend needs nothing more)"
            ) from error

        self.config = config or KubernetesBackendConfig()
        namespace: str | None = None
        if self.config.client_configuration is not None:
            api_client = client.ApiClient(self.config.client_configuration)
        else:
            # kubectl's order, the controller's too (trainer_api.kubeconfig).
            found = find_connection(self.config.config_file, self.config.context)
            if found is None:
                raise KubeconfigError(
                    "KubernetesBackendConfig: no cluster to connect to: no kubeconfig "
                    "($KUBECONFIG or ~/.kube/config) and not in a cluster"
                )
            if isinstance(found, InCluster):
                kube_config.load_incluster_config()
            else:
                kube_config.load_kube_config_from_dict(
                    found.document,
                    context=found.context_name,
                    temp_file_path=str(found.files[0].parent),
                )
            namespace = found.namespace
            api_client = client.ApiClient()
        self.namespace = self.config.namespace or namespace or "default"
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    @staticmethod
    def _is_not_found(error: Exception) -> bool:
        return getattr(error, "status", None) == 404

    def _items(self, plural: str, namespaced: bool) -> list[dict[str, Any]]:
        """The items of a custom-object list, namespaced (this namespace) or cluster-scoped."""
        if namespaced:
            listed = self.custom.list_namespaced_custom_object(
                constants.GROUP, constants.VERSION, self.namespace, plural
            )
        else:
            listed = self.custom.list_cluster_custom_object(
                constants.GROUP, constants.VERSION, plural
            )
        return list(cast(dict[str, Any], listed).get("items", []))

    # -- runtimes -------------------------------------------------------------------------------
    def _runtime_index(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every runtime by (kind, name): namespaced TrainingRuntimes, then cluster ones."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for kind, plural, namespaced in (
            (constants.TRAINING_RUNTIME_KIND, constants.TRAINING_RUNTIME_PLURAL, True),
            (
                constants.CLUSTER_TRAINING_RUNTIME_KIND,
                constants.CLUSTER_TRAINING_RUNTIME_PLURAL,
                False,
            ),
        ):
            for item in self._items(plural, namespaced=namespaced):
                found[(kind, item["metadata"]["name"])] = {**item, "kind": kind}
        return found

    def _runtime_manifests(self) -> dict[str, dict[str, Any]]:
        """Namespaced TrainingRuntimes first: they shadow ClusterTrainingRuntimes of that name."""
        found: dict[str, dict[str, Any]] = {}
        for (_, name), manifest in self._runtime_index().items():
            found.setdefault(name, manifest)
        return found

    def get_runtime_packages(self, runtime: types.Runtime) -> None:
        """Print the packages of the runtime's trainer image, as upstream: a one-node TrainJob
        runs ``print_packages`` (MPI: ``mpirun -np 1``), its log is printed, the job deleted."""
        if runtime.trainer.trainer_type == types.TrainerType.BUILTIN_TRAINER:
            raise ValueError(
                f"runtime: {runtime.name!r} takes a BuiltinTrainer, which cannot run a function"
            )
        probe = copy.deepcopy(runtime)
        if probe.trainer.command[:1] == ("mpirun",):
            probe.trainer.set_command(("mpirun", "-np", "1", *constants.DEFAULT_COMMAND))
        name = self.train(
            runtime=probe,
            trainer=types.CustomTrainer(
                func=print_packages,
                num_nodes=1,
                resources_per_node=None if probe.trainer.device == "gpu" else {"cpu": 1},
            ),
        )
        try:
            self.wait_for_job_status(name)
            print("\n".join(self.get_job_logs(name)))
        finally:
            self.delete_job(name)

    # -- jobs -----------------------------------------------------------------------------------
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        runtime = self.resolve_runtime(runtime)
        manifest = build_trainjob_manifest(
            generate_name(),
            runtime,
            trainer,
            initializer,
            options or (),
            self,
            namespace=self.namespace,
        )
        return self.submit(manifest)

    def submit(self, manifest: dict[str, Any], runtime: dict[str, Any] | None = None) -> str:
        """Create a TrainJob from its manifest; returns its name."""
        if runtime is not None:
            raise NotImplementedError(
                "the Kubernetes backend uses the runtimes installed in the cluster; apply "
                f"{runtime.get('kind')} {runtime.get('metadata', {}).get('name')!r} first"
            )
        if paths := storage.machine_paths(manifest):
            from trainer_api import FieldError

            raise InvalidTrainJobError(
                [
                    FieldError(
                        where,
                        f"{uri} is a path on this machine, which the cluster's pods cannot read; "
                        "upload it (hf://, s3://) or put it on a claim (pvc://CLAIM/PATH)",
                    )
                    for where, uri in paths
                ]
            )
        manifest.setdefault("metadata", {}).setdefault("name", generate_name())
        manifest["metadata"].setdefault("namespace", self.namespace)
        _, _, headers = self.custom.create_namespaced_custom_object_with_http_info(
            constants.GROUP,
            constants.VERSION,
            manifest["metadata"]["namespace"],
            constants.TRAINJOB_PLURAL,
            manifest,
        )
        for warning in admission_warnings((headers or {}).get("Warning")):
            _logger.warning("Warning: %s", warning)  # as kubectl prints them
        return str(manifest["metadata"]["name"])

    def _trainjob(self, name: str) -> dict[str, Any]:
        try:
            return cast(
                dict[str, Any],
                self.custom.get_namespaced_custom_object(
                    constants.GROUP,
                    constants.VERSION,
                    self.namespace,
                    constants.TRAINJOB_PLURAL,
                    name,
                ),
            )
        except Exception as error:
            if self._is_not_found(error):
                raise JobNotFoundError(name, f"namespace {self.namespace}") from None
            raise

    def _pods(self, name: str) -> list[dict[str, Any]]:
        selector = constants.POD_LABEL_SELECTOR.format(trainjob_name=name)
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=selector)
        return [self.core.api_client.sanitize_for_serialization(pod) for pod in pods.items]

    def _view(
        self, manifest: dict[str, Any], runtimes: dict[tuple[str, str], dict[str, Any]]
    ) -> types.TrainJob:
        name = manifest["metadata"]["name"]
        reference = manifest.get("spec", {}).get("runtimeRef") or {}
        kind = reference.get("kind") or constants.CLUSTER_TRAINING_RUNTIME_KIND
        runtime_name = reference.get("name", "")
        runtime_manifest = runtimes.get((kind, runtime_name)) or {
            "kind": kind,
            "metadata": {"name": runtime_name},
        }
        raw = self._pods(name)
        has_launcher = any(
            (pod["metadata"].get("labels") or {}).get(constants.JOBSET_RJOB_NAME_LABEL)
            == constants.LAUNCHER
            for pod in raw
        )
        pods = [view for pod in raw if (view := pod_view(pod, has_launcher)) is not None]
        output = cluster_output(str(manifest["metadata"]["name"]), runtime_manifest)
        return to_train_job(manifest, runtime_from_manifest(runtime_manifest), pods, output=output)

    def get_job(self, name: str) -> types.TrainJob:
        return self._view(self._trainjob(name), self._runtime_index())

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        listed = self._items(constants.TRAINJOB_PLURAL, namespaced=True)
        runtimes = self._runtime_index()
        jobs = [
            self._view(item, runtimes)
            for item in listed
            if runtime is None
            or (item.get("spec", {}).get("runtimeRef") or {}).get("name") == runtime.name
        ]
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        job = self.get_job(name)
        match = next((item for item in job.steps if item.name == step), None)
        if match is None:
            steps = ", ".join(item.name for item in job.steps) or "none yet"
            raise ValueError(f"step: TrainJob {name!r} has no step {step!r}; its steps are {steps}")
        container = step.rsplit("-", 1)[0] if step.startswith(constants.NODE) else step
        container = constants.NODE if container == constants.NODE else container
        if not follow:
            text = self.core.read_namespaced_pod_log(
                match.pod_name, self.namespace, container=container
            )
            return iter(text.splitlines())
        return self._follow_logs(match.pod_name, container)

    def _follow_logs(self, pod: str, container: str) -> Iterator[str]:
        response: Any = self.core.read_namespaced_pod_log(
            pod, self.namespace, container=container, follow=True, _preload_content=False
        )
        pending = b""
        try:
            for chunk in response.stream():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                yield from (line.decode(errors="replace") for line in lines)
            if pending:
                yield pending.decode(errors="replace")
        finally:
            response.release_conn()

    def get_job_events(self, name: str) -> list[types.Event]:
        self._trainjob(name)
        events = self.core.list_namespaced_event(self.namespace)
        result = []
        for event in events.items:
            involved = event.involved_object
            if involved is None or not (
                involved.name == name or (involved.name or "").startswith(f"{name}-")
            ):
                continue
            result.append(
                types.Event(
                    involved_object_kind=involved.kind or constants.UNKNOWN,
                    involved_object_name=involved.name or "",
                    message=event.message or "",
                    reason=event.reason or "",
                    event_time=event.first_timestamp
                    or event.event_time
                    or event.metadata.creation_timestamp
                    or datetime.now(timezone.utc),
                )
            )
        return sorted(result, key=lambda event: event.event_time)

    def suspend_job(self, name: str, suspend: bool) -> None:
        """Patch ``spec.suspend``; the operator suspends or resumes the JobSet."""
        try:
            self.custom.patch_namespaced_custom_object(
                constants.GROUP,
                constants.VERSION,
                self.namespace,
                constants.TRAINJOB_PLURAL,
                name,
                {"spec": {"suspend": suspend}},
            )
        except Exception as error:
            if self._is_not_found(error):
                raise JobNotFoundError(name, f"namespace {self.namespace}") from None
            raise

    def delete_job(self, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(
                constants.GROUP, constants.VERSION, self.namespace, constants.TRAINJOB_PLURAL, name
            )
        except Exception as error:
            if self._is_not_found(error):
                raise JobNotFoundError(name, f"namespace {self.namespace}") from None
            raise
