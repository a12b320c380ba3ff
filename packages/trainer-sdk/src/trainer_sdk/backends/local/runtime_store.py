"""The runtimes a local backend knows: the built-in ClusterTrainingRuntimes and those applied with
``trainer apply -f`` (``RuntimeStore.apply``), kept under the backend's root so that every client
and the CLI see them.

<root>/.runtimes/ClusterTrainingRuntime/<name>.json
<root>/.runtimes/TrainingRuntime/<namespace>/<name>.json

As in a cluster, a runtime is found by its kind and name (a TrainJob's ``runtimeRef``); by name
alone, a namespaced TrainingRuntime shadows a ClusterTrainingRuntime of that name. An applied
ClusterTrainingRuntime replaces a built-in one of its name, as ``kubectl apply`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainer_sdk import constants
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.private_files import make_private_dir, read_json, write_json

__all__ = ["RUNTIME_KINDS", "RuntimeKey", "RuntimeStore", "check_name"]

RUNTIMES_DIR = ".runtimes"  # not a DNS name: never a job's directory
RUNTIME_KINDS = (constants.TRAINING_RUNTIME_KIND, constants.CLUSTER_TRAINING_RUNTIME_KIND)
RuntimeKey = tuple[str, str]  # (kind, name)


def check_name(name: str) -> None:
    """ValueError naming ``metadata.name`` unless it is a lower-case DNS name (a file name here)."""
    try:
        JobDir(Path(), name)
    except ValueError as error:
        raise ValueError(f"metadata.{error}") from None


class RuntimeStore:
    """Built-in and applied runtimes of the backend rooted at ``root``, in ``namespace``."""

    def __init__(self, root: Path, namespace: str = "default") -> None:
        self.root = root
        self.namespace = namespace
        self._builtins: dict[str, dict[str, Any]] | None = None

    def _path(self, kind: str, name: str) -> Path:
        check_name(name)
        base = self.root / RUNTIMES_DIR / kind
        if kind == constants.TRAINING_RUNTIME_KIND:
            base = base / self.namespace
        return base / f"{name}.json"

    def _builtin(self) -> dict[str, dict[str, Any]]:
        if self._builtins is None:
            from trainer_sdk.backends.local.submit.planning import builtin_runtime_manifests

            self._builtins = builtin_runtime_manifests()
        return self._builtins

    def _applied(self, kind: str) -> dict[str, dict[str, Any]]:
        base = self.root / RUNTIMES_DIR / kind
        if kind == constants.TRAINING_RUNTIME_KIND:
            base = base / self.namespace
        if not base.is_dir():
            return {}
        return {path.stem: read_json(path) for path in sorted(base.glob("*.json"))}

    def index(self) -> dict[RuntimeKey, dict[str, Any]]:
        """Every runtime by (kind, name): applied TrainingRuntimes, then ClusterTrainingRuntimes
        (built-in, replaced by applied ones of the same name)."""
        found: dict[RuntimeKey, dict[str, Any]] = {}
        for name, manifest in self._applied(constants.TRAINING_RUNTIME_KIND).items():
            found[(constants.TRAINING_RUNTIME_KIND, name)] = manifest
        cluster = {**self._builtin(), **self._applied(constants.CLUSTER_TRAINING_RUNTIME_KIND)}
        for name, manifest in cluster.items():
            found[(constants.CLUSTER_TRAINING_RUNTIME_KIND, name)] = {
                **manifest,
                "kind": constants.CLUSTER_TRAINING_RUNTIME_KIND,
            }
        return found

    def by_name(self) -> dict[str, dict[str, Any]]:
        """Every runtime by name alone: a TrainingRuntime shadows a cluster one of its name."""
        found: dict[str, dict[str, Any]] = {}
        for (_, name), manifest in self.index().items():
            found.setdefault(name, manifest)
        return found

    def apply(self, manifest: Mapping[str, Any]) -> bool:
        """Store a runtime manifest (validated by the caller); True when it is new."""
        kind = str(manifest.get("kind"))
        if kind not in RUNTIME_KINDS:
            raise ValueError(f"kind: expected one of {', '.join(RUNTIME_KINDS)}, got {kind!r}")
        name = str((manifest.get("metadata") or {}).get("name", ""))
        path = self._path(kind, name)
        created = not path.is_file()
        make_private_dir(path.parent)
        document = dict(manifest)
        if kind == constants.TRAINING_RUNTIME_KIND:
            document["metadata"] = {**document["metadata"], "namespace": self.namespace}
        write_json(path, document)
        return created

    def delete(self, name: str, kind: str | None = None) -> str:
        """Remove the applied runtime ``name`` (of ``kind``; by default the one its name finds);
        returns its kind. Built-in runtimes cannot be deleted."""
        kinds = [kind] if kind else list(RUNTIME_KINDS)
        for candidate in kinds:
            path = self._path(candidate, name)
            if path.is_file():
                path.unlink()
                return candidate
        if name in self._builtin() and kind != constants.TRAINING_RUNTIME_KIND:
            raise ValueError(f"name: {name!r} is a built-in runtime; it cannot be deleted")
        raise KeyError(name)
