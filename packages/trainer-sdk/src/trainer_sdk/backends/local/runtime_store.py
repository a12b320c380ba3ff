"""The runtimes a local backend knows: the built-in ClusterTrainingRuntimes and those applied with
``trainer apply -f`` (``RuntimeStore.apply``), kept under the backend's root so that every client
and the CLI see them.

<root>/.runtimes/ClusterTrainingRuntime/<name>/runtime.json
<root>/.runtimes/TrainingRuntime/<namespace>/<name>/runtime.json

(a directory per runtime, so that every name the API accepts, up to 253 characters, is a file
name; ``<name>.json`` files of earlier versions are still read). As in a cluster, a runtime is
found by its kind and name (a TrainJob's ``runtimeRef``); by name alone, a namespaced
TrainingRuntime shadows a ClusterTrainingRuntime of that name. An applied ClusterTrainingRuntime
replaces a built-in one of its name, as ``kubectl apply`` would. Manifests are written durably
(fsync); one that cannot be read is skipped with a warning naming its file, so the other runtimes,
built-in ones included, stay usable.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainer_sdk import constants
from trainer_sdk.backends.local.jobdir import JobDir, make_private_dir, read_json, write_json

__all__ = ["RUNTIME_KINDS", "RuntimeKey", "RuntimeStore", "check_name"]

log = logging.getLogger(__name__)

RUNTIMES_DIR = ".runtimes"  # not a DNS name: never a job's directory
MANIFEST_FILE = "runtime.json"
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
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
        if not _NAMESPACE.fullmatch(namespace):  # before it is ever part of a path
            raise ValueError(  # in trainer_api.validate's words, which would say it later
                "metadata.namespace: a namespace must be a DNS-1123 label: at most 63 lowercase "
                "letters, digits and '-', starting and ending alphanumeric "
                f"(got {namespace[:80]!r})"
            )
        self.root = root
        self.namespace = namespace
        self._builtins: dict[str, dict[str, Any]] | None = None

    def _base(self, kind: str) -> Path:
        base = self.root / RUNTIMES_DIR / kind
        return base / self.namespace if kind == constants.TRAINING_RUNTIME_KIND else base

    def _path(self, kind: str, name: str) -> Path:
        check_name(name)
        return self._base(kind) / name / MANIFEST_FILE

    def _legacy_paths(self, kind: str, name: str) -> list[Path]:
        """Where an earlier version stored ``name`` (none for names too long for it)."""
        return [self._base(kind) / f"{name}.json"] if len(name) <= 250 else []

    def _builtin(self) -> dict[str, dict[str, Any]]:
        if self._builtins is None:
            from trainer_sdk.backends.local.submit.planning import builtin_runtime_manifests

            self._builtins = builtin_runtime_manifests()
        return self._builtins

    def _applied(self, kind: str) -> dict[str, dict[str, Any]]:
        base = self._base(kind)
        if not base.is_dir():
            return {}
        found: dict[str, dict[str, Any]] = {}
        for entry in sorted(base.iterdir()):
            if entry.suffix == ".json" and entry.is_file():  # an earlier version's layout
                name, path = entry.stem, entry
            elif entry.is_dir():
                name, path = entry.name, entry / MANIFEST_FILE
            else:
                continue
            manifest = _read_manifest(path, kind)
            if manifest is not None:
                found.setdefault(name, manifest)
        return found

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
        created = not any(p.is_file() for p in (path, *self._legacy_paths(kind, name)))
        make_private_dir(path.parent)
        document = dict(manifest)
        if kind == constants.TRAINING_RUNTIME_KIND:
            document["metadata"] = {**document["metadata"], "namespace": self.namespace}
        write_json(path, document, durable=True)
        for legacy in self._legacy_paths(kind, name):
            legacy.unlink(missing_ok=True)
        return created

    def delete(self, name: str, kind: str | None = None) -> str:
        """Remove the applied runtime ``name`` (of ``kind``; by default the one its name finds);
        returns its kind. Built-in runtimes cannot be deleted."""
        kinds = [kind] if kind else list(RUNTIME_KINDS)
        for candidate in kinds:
            paths = [self._path(candidate, name), *self._legacy_paths(candidate, name)]
            if any(path.is_file() for path in paths):
                for path in paths:
                    path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # a directory someone else put a file in
                    paths[0].parent.rmdir()
                return candidate
        if name in self._builtin() and kind != constants.TRAINING_RUNTIME_KIND:
            raise ValueError(f"name: {name!r} is a built-in runtime; it cannot be deleted")
        raise KeyError(name)


def _read_manifest(path: Path, kind: str) -> dict[str, Any] | None:
    """The runtime manifest at ``path``, or None (with a warning naming the file) when it cannot
    be read or is not a runtime of ``kind``."""
    try:
        manifest = read_json(path)
    except (OSError, ValueError) as error:  # ValueError: not JSON, not UTF-8
        log.warning("skipping the runtime in %s: %s", path, error)
        return None
    if not isinstance(manifest, dict) or manifest.get("kind") != kind:
        log.warning("skipping %s: not a %s manifest", path, kind)
        return None
    return manifest
