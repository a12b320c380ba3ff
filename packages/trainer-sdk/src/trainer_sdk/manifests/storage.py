"""Initializer storage URIs: what a user may write, and what the TrainJob carries (pure).

A path on this machine is ``file:///abs/path`` or a path written as one (``/abs``, ``./rel``,
``../rel``, ``~/rel``); it is never read as a Hugging Face repository, so ``./data.jsonl`` is the
file. Upstream's bare ``org/name`` is ``hf://org/name``; other schemes stay as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

__all__ = ["DATA_SOURCES", "FILE_SCHEME", "local_path", "machine_paths", "trainjob_uri"]

FILE_SCHEME: Final = "file://"
# The ``datasets`` builder that reads each data file suffix.
DATA_SOURCES: Final = {
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
    ".csv": "csv",
    ".arrow": "arrow",
    ".txt": "text",
}
_PATH_PREFIXES: Final = ("/", "./", "../", "~")


def local_path(storage_uri: str) -> Path | None:
    """The absolute path a storage URI names on this machine, or None when it is no path
    (relative paths are resolved against the working directory, ``~`` expanded)."""
    if storage_uri.startswith(FILE_SCHEME):
        parsed = urlparse(storage_uri)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"storage_uri: expected file:///<absolute path>, got {storage_uri!r}")
        return Path(unquote(parsed.path))
    if storage_uri in (".", "..") or storage_uri.startswith(_PATH_PREFIXES):
        return Path(storage_uri).expanduser().resolve()
    return None


def trainjob_uri(storage_uri: str) -> str:
    """The URI the TrainJob's initializer carries: ``file:///...`` for a path, ``hf://org/name``
    for upstream's bare ``org/name``, anything else as written."""
    path = local_path(storage_uri)
    if path is not None:
        return path.as_uri()
    return storage_uri if "://" in storage_uri else f"hf://{storage_uri}"


def machine_paths(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field path, URI) of each initializer of a TrainJob manifest, and each trainer argument
    ``--<name>_storage_uri=`` (a distillation's teacher), that names a path on this machine: a
    cluster's pods cannot read it (the Kubernetes backend refuses them)."""
    spec = manifest.get("spec") or {}
    found = [
        (f"spec.initializer.{step}.storageUri", str(initializer.get("storageUri", "")))
        for step, initializer in (spec.get("initializer") or {}).items()
        if initializer
    ]
    for index, argument in enumerate((spec.get("trainer") or {}).get("args") or ()):
        name, _, value = str(argument).partition("=")
        if name.startswith("--") and name.endswith("_storage_uri"):
            found.append((f"spec.trainer.args[{index}]", value))
    return [(where, uri) for where, uri in found if uri.startswith(FILE_SCHEME)]
