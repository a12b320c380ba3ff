"""The resource types the stand-in serves: built-in kinds and those declared by CRDs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["BUILTIN_TYPES", "TRAINER_TYPES", "ResourceType", "types_from_crd"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives in the URL space and how it behaves."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status: bool = False
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update", "watch")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def group_version(self) -> tuple[str, str]:
        return (self.group, self.version)


def _core(
    plural: str,
    kind: str,
    namespaced: bool = True,
    status: bool = False,
    short: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType("", "v1", plural, kind, namespaced, status, short)


BUILTIN_TYPES: Final[tuple[ResourceType, ...]] = (
    _core("namespaces", "Namespace", namespaced=False, status=True, short=("ns",)),
    _core("configmaps", "ConfigMap", short=("cm",)),
    _core("secrets", "Secret"),
    _core("services", "Service", status=True, short=("svc",)),
    _core("serviceaccounts", "ServiceAccount", short=("sa",)),
    _core("pods", "Pod", status=True, short=("po",)),
    _core("events", "Event", short=("ev",)),
    ResourceType("events.k8s.io", "v1", "events", "Event"),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease"),
    ResourceType("apps", "v1", "deployments", "Deployment", status=True, short_names=("deploy",)),
    ResourceType("batch", "v1", "jobs", "Job", status=True),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        status=True,
        short_names=("crd", "crds"),
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
    ),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        namespaced=False,
        verbs=("create",),
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        namespaced=False,
    ),
)


# The Kubeflow Trainer and JobSet kinds, to register without loading their CRD files.
TRAINER_TYPES: Final[tuple[ResourceType, ...]] = (
    ResourceType("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", status=True),
    ResourceType("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime"),
    ResourceType(
        "trainer.kubeflow.org",
        "v1alpha1",
        "clustertrainingruntimes",
        "ClusterTrainingRuntime",
        namespaced=False,
    ),
    ResourceType("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", status=True),
    ResourceType(
        "trainer.kubeflow.org", "v1alpha1", "optimizationjobs", "OptimizationJob", status=True
    ),
)


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition declares, one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    for field in ("group", "names", "scope", "versions"):
        if field not in spec:
            raise ValueError(f"spec.{field}: required in a CustomResourceDefinition")
    return [
        ResourceType(
            group=spec["group"],
            version=version["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec["scope"] == "Namespaced",
            status="status" in (version.get("subresources") or {}),
            short_names=tuple(names.get("shortNames") or ()),
        )
        for version in spec["versions"]
        if version.get("served", True)
    ]
