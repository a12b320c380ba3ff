"""DataCache: a dataset initializer with a ``cache://`` storage URI runs the job's data cache.

Upstream's contract is kept, so its TrainJobs work unchanged: the runtime's
``dataset-initializer`` container has ``CACHE_IMAGE`` in its env; the TrainJob sets
``spec.initializer.dataset.storageUri: cache://SCHEMA/TABLE`` and the cache's options as that
initializer's env (``METADATA_LOC``, ``CLUSTER_SIZE``, ``HEAD_CPU``, ``HEAD_MEM``,
``WORKER_CPU``, ``WORKER_MEM``, ``IAM_ROLE``); the trainer waits for the initializer step
(``dependsOn``). Upstream's initializer pod creates the cache through the API server and waits
for it. Here the build makes the cache objects (``data_cache_manifests.cache_manifests``: the
head and node StatefulSets and their Services, owned by the TrainJob like the JobSet), so no
pod needs API rights and the cache is built like every other object; the initializer step only
waits until the head reports every partition loaded (``data-cache probe --wait``, under the
namespace's default ServiceAccount rather than upstream's privileged one), and the trainer
container gets the endpoint and dataset name as env (``data_cache_manifests.trainer_env``).
``data_cache_manifests`` has no dependencies: building a cache never imports torch.

The cache is not open to whoever reaches it: the build makes a Secret ``<job>-cache-token``
with a random read token and admin token (``Settings.cache_token``; immutable, built only while
absent from the observed objects, so never regenerated, like the MPI SSH key). The head and
the nodes get both; the trainer and the initializer's probe get the read token as
``DATA_CACHE_TOKEN``, which ``CacheDataset.from_env()`` reads. Admin calls (load, drop) need the
admin token, which only the head holds, so a trainer cannot drop the dataset, and the head's
remote loads are off, so no client can make it read with its ``IAM_ROLE``.

Mapping: TABLE is the dataset name; ``METADATA_LOC`` is the source the head loads (an Iceberg
table's metadata file, as upstream, or any path or URI ``data-cache serve`` reads);
``CLUSTER_SIZE`` counts the head and the nodes, as upstream's LeaderWorkerSet size does, so the
cache has ``CLUSTER_SIZE - 1`` nodes; the CPU and memory values are each pod's requests and
limits (upstream's defaults); ``IAM_ROLE`` makes a ServiceAccount ``<job>-cache`` annotated for
EKS, which both StatefulSets run under. While the TrainJob is suspended the StatefulSets have no
replicas, so a queued job holds no cache memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import data_cache_manifests
import trainer_api
from trainer_api import FieldError, Quantity, TrainJob

from trainer_runtime import constants, manifests, podspecs
from trainer_runtime.errors import BuildError
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plan import Observed
from trainer_runtime.plugins._policies import reserved_env_errors
from trainer_runtime.views import ContainerDoc, EnvVarDoc, env_docs

__all__ = ["DataCache", "cache_service_account_name"]

CACHE_SCHEME: Final = "cache://"
CACHE_IMAGE_ENV: Final = "CACHE_IMAGE"
SOURCE_ENV: Final = "METADATA_LOC"
CLUSTER_SIZE_ENV: Final = "CLUSTER_SIZE"
IAM_ROLE_ENV: Final = "IAM_ROLE"
TOKEN_ENV: Final = data_cache_manifests.TOKEN_ENV
RESOURCE_ENV: Final = {
    "head": (("cpu", "HEAD_CPU"), ("memory", "HEAD_MEM")),
    "node": (("cpu", "WORKER_CPU"), ("memory", "WORKER_MEM")),
}
DEFAULTS: Final[Mapping[str, str]] = {
    CLUSTER_SIZE_ENV: "3",
    "HEAD_CPU": "1",
    "HEAD_MEM": "1Gi",
    "WORKER_CPU": "2",
    "WORKER_MEM": "2Gi",
}
"""Upstream's defaults (its cache initializer's configuration)."""
READY_TIMEOUT_SECONDS: Final = 1800
"""How long the initializer step waits for the cache to load before it fails."""
ROLE_ARN_ANNOTATION: Final = "eks.amazonaws.com/role-arn"
STS_REGIONAL_ANNOTATION: Final = "eks.amazonaws.com/sts-regional-endpoints"
_ENV_PATH: Final = "spec.initializer.dataset.env"


def cache_service_account_name(job_name: str) -> str:
    """Name of the ServiceAccount the cache runs under when the job gives an ``IAM_ROLE``."""
    return f"{job_name}-cache"


def _initializer(info: RuntimeInfo) -> ContainerDoc | None:
    """The dataset-initializer container when its storage URI is ``cache://``, else None."""
    pod_set = info.pod_set_by_ancestor(trainer_api.DATASET_INITIALIZER)
    container = pod_set.container(trainer_api.DATASET_INITIALIZER) if pod_set else None
    if container is None:
        return None
    uri = podspecs.env_value(container, constants.INITIALIZER_ENV_STORAGE_URI)
    return container if isinstance(uri, str) and uri.startswith(CACHE_SCHEME) else None


def _env_path(job: TrainJob, name: str) -> str:
    """The field path of env var ``name`` of the job's dataset initializer (its list when the
    runtime sets it)."""
    initializer = job.spec.initializer
    dataset = initializer.dataset if initializer is not None else None
    for index, var in enumerate((dataset.env if dataset is not None else None) or ()):
        if var.name == name:
            return f"{_ENV_PATH}[{index}].value"
    return _ENV_PATH


def _settings(container: ContainerDoc) -> dict[str, Any]:
    """The initializer's env values this plugin reads (an empty value counts as unset), with
    upstream's defaults."""
    names = (CACHE_IMAGE_ENV, SOURCE_ENV, IAM_ROLE_ENV, *DEFAULTS)
    found = {name: podspecs.env_value(container, name) for name in names}
    return {
        name: found[name] if found[name] not in (None, "") else DEFAULTS.get(name) for name in names
    }


def _dataset_name(uri: str) -> str | None:
    """TABLE of ``cache://SCHEMA/TABLE``, or None when the URI has another shape."""
    parts = uri.removeprefix(CACHE_SCHEME).split("/")
    return parts[1] if len(parts) == 2 and all(parts) else None


def _table(container: ContainerDoc) -> str:
    """TABLE, the dataset name, of a validated initializer (BuildError if its URI has none)."""
    uri = str(podspecs.env_value(container, constants.INITIALIZER_ENV_STORAGE_URI))
    table = _dataset_name(uri)
    if table is None:
        raise BuildError(
            f"spec.initializer.dataset.storageUri: expected {CACHE_SCHEME}SCHEMA/TABLE"
        )
    return table


def _trainer_env(info: RuntimeInfo, container: ContainerDoc) -> list[EnvVarDoc]:
    """The trainer's cache env (fresh dicts each call, so no two containers share one)."""
    return env_docs(
        data_cache_manifests.trainer_env(
            info.job_name,
            info.namespace or "default",
            _table(container),
            token_secret=data_cache_manifests.token_secret_name(info.job_name),
        )
    )


def _token_secret(info: RuntimeInfo, job: TrainJob, name: str, namespace: str) -> dict[str, Any]:
    """The Secret with the cache's read and admin tokens, fresh from ``Settings.cache_token``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {**manifests.owned_metadata(job, name), "namespace": namespace},
        "type": "Opaque",
        "immutable": True,
        "stringData": {
            data_cache_manifests.TOKEN_KEY: info.settings.cache_token(),
            data_cache_manifests.ADMIN_TOKEN_KEY: info.settings.cache_token(),
        },
    }


def _resources(settings: Mapping[str, Any], role: str) -> dict[str, Any]:
    amounts = {resource: str(settings[name]) for resource, name in RESOURCE_ENV[role]}
    return {"requests": dict(amounts), "limits": dict(amounts)}


class DataCache:
    """Runs a ``cache://`` dataset initializer's cache and points the trainer at it."""

    name = "DataCache"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """A ``cache://SCHEMA/TABLE`` URI, a cache image and a source, literal and well-formed
        options, and no trainer env that this plugin sets."""
        container = _initializer(info)
        if container is None:
            return []
        reserved = (
            data_cache_manifests.ENDPOINT_ENV,
            data_cache_manifests.DATASET_ENV,
            data_cache_manifests.TOKEN_ENV,
        )
        errors = reserved_env_errors(job, reserved, "data-cache")
        uri = str(podspecs.env_value(container, constants.INITIALIZER_ENV_STORAGE_URI))
        if _dataset_name(uri) is None:
            errors.append(
                FieldError(
                    "spec.initializer.dataset.storageUri",
                    f"expected cache://SCHEMA/TABLE, got {uri!r}",
                )
            )
        settings = _settings(container)
        for name, value in settings.items():
            if value is not None and not isinstance(value, str):
                errors.append(FieldError(_env_path(job, name), f"{name} must be a literal value"))
        if settings[CACHE_IMAGE_ENV] is None:
            errors.append(
                FieldError(
                    "spec.runtimeRef.name",
                    f"{info.runtime_kind} {info.runtime_name!r} has no {CACHE_IMAGE_ENV} in its "
                    f"dataset-initializer env, so it cannot run a {CACHE_SCHEME} dataset",
                )
            )
        if settings[SOURCE_ENV] is None:
            errors.append(
                FieldError(
                    _ENV_PATH,
                    f"{SOURCE_ENV} is required with a {CACHE_SCHEME} storageUri: the table's "
                    "metadata file, or any path or URI the cache reads",
                )
            )
        size = settings[CLUSTER_SIZE_ENV]
        if isinstance(size, str) and not (size.isdigit() and int(size) >= 2):
            errors.append(
                FieldError(
                    _env_path(job, CLUSTER_SIZE_ENV),
                    f"{CLUSTER_SIZE_ENV} must be an integer >= 2 (the head and at least one "
                    f"node), got {size!r}",
                )
            )
        for role_env in RESOURCE_ENV.values():
            for _, name in role_env:
                value = settings[name]
                if not isinstance(value, str):
                    continue
                try:
                    Quantity.parse(value)
                except ValueError as error:
                    errors.append(FieldError(_env_path(job, name), f"{name}: {error}"))
        return errors

    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        """The initializer waits for the cache; the trainer gets the endpoint and dataset env;
        both get the cache's read token."""
        container = _initializer(info)
        if container is None:
            return
        settings = _settings(container)
        namespace = info.namespace or "default"
        container["image"] = settings[CACHE_IMAGE_ENV]
        container["command"] = ["data-cache"]
        container["args"] = [
            "probe",
            data_cache_manifests.cache_endpoint(info.job_name, namespace),
            "--wait",
            str(READY_TIMEOUT_SECONDS),
        ]
        # Upstream's ServiceAccount lets its initializer create the cache; waiting needs no
        # rights, so the pod runs under the namespace's default and works where it is absent.
        initializer = info.pod_set_by_ancestor(trainer_api.DATASET_INITIALIZER)
        if initializer is not None:
            initializer.pod_spec.pop("serviceAccountName", None)
        podspecs.upsert_env(
            container,
            [var for var in _trainer_env(info, container) if var["name"] == TOKEN_ENV],
        )
        trainer = info.trainer_container()
        if trainer is not None:
            podspecs.upsert_env(trainer, _trainer_env(info, container))

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The cache's token Secret (only while it does not exist), ServiceAccount (with an
        ``IAM_ROLE``), Services and StatefulSets."""
        container = _initializer(info)
        if container is None:
            return []
        settings = _settings(container)
        namespace = info.namespace or "default"
        objects: list[dict[str, Any]] = []
        secret_name = data_cache_manifests.token_secret_name(info.job_name)
        if observed.find("Secret", secret_name) is None:
            objects.append(_token_secret(info, job, secret_name, namespace))
        service_account = None
        if settings[IAM_ROLE_ENV] is not None:
            service_account = cache_service_account_name(info.job_name)
            metadata = {**manifests.owned_metadata(job, service_account), "namespace": namespace}
            metadata["annotations"] = {
                ROLE_ARN_ANNOTATION: settings[IAM_ROLE_ENV],
                STS_REGIONAL_ANNOTATION: "true",
            }
            objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata})
        try:
            cache: list[dict[str, Any]] = data_cache_manifests.cache_manifests(
                info.job_name,
                namespace,
                settings[CACHE_IMAGE_ENV],
                settings[SOURCE_ENV],
                int(settings[CLUSTER_SIZE_ENV]) - 1,
                dataset=_table(container),
                resources=_resources(settings, "node"),
                head_resources=_resources(settings, "head"),
                service_account=service_account,
                token_secret=secret_name,
            )
        except data_cache_manifests.ManifestArgumentError as error:
            raise BuildError(f"data cache: {error}") from error
        suspended = bool(job.spec.suspend)
        for document in cache:
            document["metadata"]["ownerReferences"] = [manifests.owner_reference(job)]
            if suspended and document["kind"] == "StatefulSet":
                document["spec"]["replicas"] = 0
        return objects + cache
