"""Where a client finds its cluster, in kubectl's order; shared by the SDK and the controller.

1. an explicit kubeconfig (``--kubeconfig``, ``KubernetesBackendConfig.config_file``), alone;
2. else every file of ``$KUBECONFIG`` (``os.pathsep``-separated, missing files skipped), merged
   as kubectl merges them: the first file to name a cluster, user or context wins it, and the
   first ``current-context`` wins;
3. else ``~/.kube/config``, when ``$KUBECONFIG`` is unset or empty;
4. else, when nothing above gave a file, the pod's service account (in-cluster).

Paths in a kubeconfig are made absolute against the file that holds them, so a merged document
reads the same from anywhere. This module reads files and the environment it is given; it never
contacts a server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "InCluster",
    "Kubeconfig",
    "KubeconfigError",
    "find_connection",
    "kubeconfig_files",
    "merge_kubeconfigs",
]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_SECTIONS: Final = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# Keys that hold a path, per section, resolved against the kubeconfig that holds them.
_PATH_KEYS: Final = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be read or used; the message names the file and the field."""


@dataclass(frozen=True)
class InCluster:
    """The pod's service account."""

    server: str
    token_file: Path
    ca_file: Path
    namespace: str | None

    @property
    def source(self) -> str:
        return f"in-cluster service account ({self.token_file.parent})"


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig (one file or several merged) and the context it selects."""

    files: tuple[Path, ...]
    document: dict[str, Any]
    """The merged document, paths absolute, ``current-context`` the selected context."""

    @property
    def source(self) -> str:
        return f"kubeconfig {os.pathsep.join(map(str, self.files))}"

    @property
    def context_name(self) -> str:
        return str(self.document["current-context"])

    def context(self) -> dict[str, Any]:
        return self.entry("contexts", self.context_name)

    def cluster(self) -> dict[str, Any]:
        return self.entry("clusters", self.context().get("cluster"))

    def user(self) -> dict[str, Any]:
        name = self.context().get("user")
        return self.entry("users", name) if name else {}

    @property
    def namespace(self) -> str | None:
        namespace = self.context().get("namespace")
        return str(namespace) if namespace else None

    def entry(self, section: str, name: object) -> dict[str, Any]:
        """The value of the entry called ``name`` in ``section`` (clusters, users, contexts)."""
        field = dict(_SECTIONS)[section]
        for item in self.document.get(section) or []:
            if isinstance(item, dict) and item.get("name") == name:
                value = item.get(field) or {}
                if isinstance(value, dict):
                    return value
        raise KubeconfigError(f"{self.source}: {section}: no entry named {name!r}")


def kubeconfig_files(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str], home: Path
) -> tuple[list[Path], bool]:
    """The kubeconfig files to read, in precedence order, and whether they were named explicitly
    (an explicit file that is missing is an error; listed ones that are missing are skipped)."""
    if explicit is not None and str(explicit):
        return [Path(explicit)], True
    listed = [Path(part) for part in environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    return (listed or [home / ".kube" / "config"]), False


def merge_kubeconfigs(paths: Sequence[Path]) -> dict[str, Any]:
    """The documents at ``paths`` merged as kubectl merges ``$KUBECONFIG`` (first wins)."""
    merged: dict[str, Any] = {section: [] for section, _ in _SECTIONS}
    for path in paths:
        document = _read(path)
        if "current-context" not in merged and document.get("current-context"):
            merged["current-context"] = document["current-context"]
        for section, field in _SECTIONS:
            items = document.get(section)
            items = [] if items is None else items
            if not isinstance(items, list):
                raise KubeconfigError(f"kubeconfig {path}: {section}: expected a list")
            taken = {item.get("name") for item in merged[section]}
            for item in items:
                if isinstance(item, dict) and item.get("name") not in taken:
                    merged[section].append(_absolute(item, field, path.parent))
                    taken.add(item.get("name"))
    return merged


def find_connection(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    service_account: Path = SERVICE_ACCOUNT_DIR,
) -> Kubeconfig | InCluster | None:
    """The cluster connection kubectl would use, or None when there is none."""
    env = os.environ if environ is None else environ
    files, explicit = kubeconfig_files(kubeconfig, env, home or Path.home())
    if explicit and not files[0].is_file():
        raise KubeconfigError(f"kubeconfig {files[0]}: no such file")
    present = [path for path in files if path.is_file()]
    if present:
        document = merge_kubeconfigs(present)
        chosen = context or document.get("current-context")
        if not chosen:
            raise KubeconfigError(
                f"kubeconfig {os.pathsep.join(map(str, present))}: current-context is not set"
            )
        found = Kubeconfig(tuple(present), {**document, "current-context": chosen})
        found.context()  # the selected context must exist
        return found
    if env.get("KUBERNETES_SERVICE_HOST") and (service_account / "token").is_file():
        host, port = env["KUBERNETES_SERVICE_HOST"], env.get("KUBERNETES_SERVICE_PORT", "443")
        host = f"[{host}]" if ":" in host else host
        namespace_file = service_account / "namespace"
        return InCluster(
            server=f"https://{host}:{port}",
            token_file=service_account / "token",
            ca_file=service_account / "ca.crt",
            namespace=namespace_file.read_text().strip() if namespace_file.is_file() else None,
        )
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise KubeconfigError(f"kubeconfig {path}: cannot read it: {error}") from error
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise KubeconfigError(f"kubeconfig {path}: expected a mapping, got {document!r}")
    return document


def _absolute(item: dict[str, Any], field: str, base: Path) -> dict[str, Any]:
    value = item.get(field)
    if not isinstance(value, dict):
        return dict(item)
    resolved = dict(value)
    for key in _PATH_KEYS.get(field, ()):
        if isinstance(resolved.get(key), str) and resolved[key]:
            resolved[key] = str(base / resolved[key])
    return {**item, field: resolved}
