"""The Kubernetes objects that run a cache for one TrainJob, as plain dicts (no I/O).

A controller plugin calls ``cache_manifests`` and applies what it returns; the trainer reads the
head's endpoint from ``ENDPOINT_ENV`` (and the dataset name from ``DATASET_ENV``, its token from
``TOKEN_ENV``), which ``trainer_env`` gives. Objects, all named after the job:

- ``<job>-cache-nodes``: a headless Service giving each node pod a stable DNS name;
- ``<job>-cache-node``: a StatefulSet of ``num_nodes`` pods running ``data-cache node``;
- ``<job>-cache``: the Service trainers connect to (the head, port 50051);
- ``<job>-cache-head``: a one-pod StatefulSet running ``data-cache head SOURCE --node ...``,
  ready only once every partition is loaded (``data-cache probe``).

Both bind 0.0.0.0 and take their tokens from the caller's Secret ``token_secret`` (keys
``TOKEN_KEY`` and ``ADMIN_TOKEN_KEY``, which the caller generates): every call must present the
read token, and only the head holds the admin token the nodes take partitions with. The head's
remote ``load`` is off (no ``--load-root``), so no client can make it read with its identity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "ADMIN_TOKEN_ENV",
    "ADMIN_TOKEN_KEY",
    "DATASET_ENV",
    "ENDPOINT_ENV",
    "HEAD_PORT",
    "NODE_PORT",
    "TOKEN_ENV",
    "TOKEN_KEY",
    "ManifestArgumentError",
    "cache_endpoint",
    "cache_manifests",
    "serve_args",
    "token_secret_name",
    "trainer_env",
]

ENDPOINT_ENV: Final = "DATA_CACHE_ENDPOINT"
"""The environment variable that carries the cache's endpoint (``grpc://...``) to the trainer."""
DATASET_ENV: Final = "DATA_CACHE_DATASET"
"""The environment variable that carries the dataset name to the trainer."""
TOKEN_ENV: Final = "DATA_CACHE_TOKEN"
"""The environment variable that carries the cache's read token (every call presents it)."""
ADMIN_TOKEN_ENV: Final = "DATA_CACHE_ADMIN_TOKEN"
"""The environment variable that carries the cache's admin token (load, drop, put)."""
TOKEN_KEY: Final = "token"
"""The key of the read token in the job's token Secret."""
ADMIN_TOKEN_KEY: Final = "admin-token"
"""The key of the admin token in the job's token Secret."""
HEAD_PORT: Final = 50051
NODE_PORT: Final = 50052


class ManifestArgumentError(ValueError):
    """An argument of ``cache_manifests`` or ``serve_args`` is wrong; the message names it."""


_DNS_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_STATEFULSET_NAME_MAX: Final = 52  # leaves room for the controller-revision-hash label value
_COMPONENT: Final = "app.kubernetes.io/component"


def cache_endpoint(job_name: str, namespace: str) -> str:
    """The head's endpoint inside the cluster, as the trainer should receive it."""
    return f"grpc://{job_name}-cache.{namespace}.svc:{HEAD_PORT}"


def token_secret_name(job_name: str) -> str:
    """The name of the Secret that holds the job's cache tokens."""
    return f"{job_name}-cache-token"


def trainer_env(
    job_name: str, namespace: str, dataset: str, *, token_secret: str
) -> list[dict[str, Any]]:
    """Env entries that point a trainer container at the job's cache, with its read token
    from Secret ``token_secret``."""
    return [
        {"name": ENDPOINT_ENV, "value": cache_endpoint(job_name, namespace)},
        {"name": DATASET_ENV, "value": dataset},
        _secret_env(TOKEN_ENV, token_secret, TOKEN_KEY),
    ]


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def cache_manifests(
    job_name: str,
    namespace: str,
    image: str,
    source: str | Sequence[str],
    num_nodes: int,
    *,
    token_secret: str,
    dataset: str = "data",
    replicas: int = 1,
    memory_limit: int | None = None,
    resources: Mapping[str, Any] | None = None,
    head_resources: Mapping[str, Any] | None = None,
    service_account: str | None = None,
    owner_uid: str | None = None,
    env: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The Services and StatefulSets that run a cache of ``source`` for TrainJob ``job_name``.

    ``token_secret`` names the Secret with the cache's tokens (``TOKEN_KEY``, ``ADMIN_TOKEN_KEY``);
    ``memory_limit`` (bytes) is each node's budget; ``resources`` and ``head_resources`` are the
    node and head containers' Kubernetes resources; ``service_account`` runs both pods under that
    ServiceAccount (e.g. one with cloud credentials for the source); ``owner_uid`` makes the
    TrainJob own every object; ``env`` is added to both containers.
    """
    _check(
        job_name, namespace, image, source, num_nodes, dataset, replicas, memory_limit, token_secret
    )

    def tokens() -> list[dict[str, Any]]:
        return [
            _secret_env(TOKEN_ENV, token_secret, TOKEN_KEY),
            _secret_env(ADMIN_TOKEN_ENV, token_secret, ADMIN_TOKEN_KEY),
        ]

    sources = [source] if isinstance(source, str) else list(source)
    nodes_service = f"{job_name}-cache-nodes"
    node_set = f"{job_name}-cache-node"
    head_service = f"{job_name}-cache"
    head_set = f"{job_name}-cache-head"
    domain = f"{nodes_service}.{namespace}.svc"
    node_locations = [
        f"grpc://{node_set}-{index}.{domain}:{NODE_PORT}" for index in range(num_nodes)
    ]
    node_args = [
        "node",
        "--host",
        "0.0.0.0",
        "--port",
        str(NODE_PORT),
        "--advertise-host",
        f"$(POD_NAME).{domain}",
    ]
    if memory_limit is not None:
        node_args += ["--memory-limit", str(memory_limit)]
    head_args = [
        "head",
        *sources,
        "--name",
        dataset,
        "--host",
        "0.0.0.0",
        "--port",
        str(HEAD_PORT),
        "--advertise-host",
        f"{head_service}.{namespace}.svc",
        "--replicas",
        str(replicas),
    ]
    for location in node_locations:
        head_args += ["--node", location]

    def metadata(name: str, role: str) -> dict[str, Any]:
        document: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": _labels(job_name, role),
        }
        if owner_uid is not None:
            document["ownerReferences"] = [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": job_name,
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        return document

    node_container: dict[str, Any] = {
        "name": "node",
        "image": image,
        "command": ["data-cache"],
        "args": node_args,
        "ports": [{"name": "flight", "containerPort": NODE_PORT}],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            *[dict(entry) for entry in env],
            *tokens(),
        ],
        "readinessProbe": {"tcpSocket": {"port": NODE_PORT}, "periodSeconds": 2},
    }
    if resources is not None:
        node_container["resources"] = dict(resources)
    head_container: dict[str, Any] = {
        "name": "head",
        "image": image,
        "command": ["data-cache"],
        "args": head_args,
        "ports": [{"name": "flight", "containerPort": HEAD_PORT}],
        "env": [*[dict(entry) for entry in env], *tokens()],
        "readinessProbe": {
            "exec": {"command": ["data-cache", "probe", f"grpc://127.0.0.1:{HEAD_PORT}"]},
            "periodSeconds": 5,
            "timeoutSeconds": 10,
        },
    }
    if head_resources is not None:
        head_container["resources"] = dict(head_resources)
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(nodes_service, "node"),
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": _labels(job_name, "node"),
                "ports": [{"name": "flight", "port": NODE_PORT, "targetPort": NODE_PORT}],
            },
        },
        _statefulset(
            metadata(node_set, "node"),
            nodes_service,
            num_nodes,
            _labels(job_name, "node"),
            node_container,
            service_account,
        ),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(head_service, "head"),
            "spec": {
                "selector": _labels(job_name, "head"),
                "ports": [{"name": "flight", "port": HEAD_PORT, "targetPort": HEAD_PORT}],
            },
        },
        _statefulset(
            metadata(head_set, "head"),
            head_service,
            1,
            _labels(job_name, "head"),
            head_container,
            service_account,
        ),
    ]


def serve_args(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """``data-cache serve`` arguments that run, in one local process, the cache that these
    ``cache_manifests`` objects describe: same sources, dataset, node count, replicas and node
    memory limit, on a free loopback port (a local driver's stand-in for the StatefulSets)."""
    head = _cache_container(objects, "head")
    node = _cache_container(objects, "node")
    args = list(head["args"])
    first_option = next(index for index, arg in enumerate(args) if arg.startswith("--"))
    options = {args[index]: args[index + 1] for index in range(first_option, len(args), 2)}
    served = [
        "serve",
        *args[1:first_option],
        "--name",
        options["--name"],
        "--nodes",
        str(args.count("--node")),
        "--replicas",
        options["--replicas"],
    ]
    if "--memory-limit" in node["args"]:
        served += ["--memory-limit", node["args"][node["args"].index("--memory-limit") + 1]]
    return served


def _cache_container(objects: Sequence[Mapping[str, Any]], role: str) -> Mapping[str, Any]:
    for document in objects:
        labels = (document.get("metadata") or {}).get("labels") or {}
        if document.get("kind") == "StatefulSet" and labels.get(_COMPONENT) == f"cache-{role}":
            container: Mapping[str, Any] = document["spec"]["template"]["spec"]["containers"][0]
            return container
    raise ManifestArgumentError(f"objects: no cache {role} StatefulSet (from cache_manifests)")


def _statefulset(
    metadata: dict[str, Any],
    service: str,
    replicas: int,
    labels: dict[str, str],
    container: dict[str, Any],
    service_account: str | None,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [container]}
    if service_account is not None:
        pod_spec["serviceAccountName"] = service_account
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata,
        "spec": {
            "serviceName": service,
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def _labels(job_name: str, role: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "data-cache",
        _COMPONENT: f"cache-{role}",
        "trainer.kubeflow.org/trainjob-name": job_name,
    }


def _check(
    job_name: str,
    namespace: str,
    image: str,
    source: str | Sequence[str],
    num_nodes: int,
    dataset: str,
    replicas: int,
    memory_limit: int | None,
    token_secret: str,
) -> None:
    problems = []
    longest = f"{job_name}-cache-nodes"
    if not isinstance(job_name, str) or not _DNS_LABEL.fullmatch(job_name):
        problems.append(f"job_name: expected a DNS label (a-z, 0-9, '-'), got {job_name!r}")
    elif len(f"{job_name}-cache-head") > _STATEFULSET_NAME_MAX or len(longest) > 63:
        problems.append(
            f"job_name: {job_name!r} is too long; '{job_name}-cache-head' must fit in "
            f"{_STATEFULSET_NAME_MAX} characters"
        )
    if not isinstance(namespace, str) or not _DNS_LABEL.fullmatch(namespace):
        problems.append(f"namespace: expected a DNS label, got {namespace!r}")
    if not isinstance(image, str) or not image:
        problems.append("image: expected a container image reference")
    sources = [source] if isinstance(source, str) else list(source)
    if not sources or not all(isinstance(item, str) and item for item in sources):
        problems.append("source: expected a path or URI (or a list of them)")
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        problems.append(f"num_nodes: expected an integer >= 1, got {num_nodes!r}")
    elif not 1 <= replicas <= num_nodes:
        problems.append(
            f"replicas: expected 1 <= replicas <= num_nodes={num_nodes}, got {replicas}"
        )
    if not isinstance(dataset, str) or not dataset:
        problems.append("dataset: expected a non-empty dataset name")
    if memory_limit is not None and memory_limit < 1:
        problems.append(f"memory_limit: expected bytes >= 1, got {memory_limit}")
    if not isinstance(token_secret, str) or not _DNS_SUBDOMAIN.fullmatch(token_secret):
        problems.append(f"token_secret: expected the name of a Secret, got {token_secret!r}")
    if problems:
        raise ManifestArgumentError("; ".join(problems))
