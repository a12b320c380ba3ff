"""Copy a data set or model from a path on this machine (``file:///...``): the local backend's
initializers, whose pods see the host's files. Files are hard-linked where the volume is on the
same file system (nothing is written then; training never changes its inputs), else copied."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from trainer_sdk.initializers.files import is_ignored
from trainer_sdk.manifests.storage import local_path

__all__ = ["copy_local"]


def _link_or_copy(source: Path, destination: Path) -> Path:
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.unlink(missing_ok=True)
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not allowed there
        shutil.copy2(source, destination)
    return destination


def copy_local(storage_uri: str, target: Path, ignore_patterns: Sequence[str] = ()) -> list[Path]:
    """The file at ``storage_uri`` into ``target`` (under its own name), or every file of the
    directory there (keeping its layout, less ``ignore_patterns``); returns the files written."""
    source = local_path(storage_uri)
    if source is None:
        raise ValueError(f"STORAGE_URI: expected file:///<path>, got {storage_uri!r}")
    if source.is_file():
        return [_link_or_copy(source, target / source.name)]
    if not source.is_dir():
        raise FileNotFoundError(f"{storage_uri}: no such file or directory on this machine")
    written = [
        _link_or_copy(path, target / path.relative_to(source))
        for path in sorted(source.rglob("*"))
        if path.is_file() and not is_ignored(str(path.relative_to(source)), ignore_patterns)
    ]
    if not written:
        raise FileNotFoundError(f"{storage_uri}: no files to copy (after ignore patterns)")
    return written
