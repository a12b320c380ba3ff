"""Shared by the downloaders: which files to skip, and writing one file under the target."""

from __future__ import annotations

import fnmatch
import shutil
import urllib.request
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

__all__ = ["download_file", "is_ignored"]


def is_ignored(name: str, ignore_patterns: Sequence[str]) -> bool:
    """Whether ``name`` (a relative path) matches one of the glob patterns."""
    base = PurePosixPath(name).name
    return any(
        fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(base, pattern)
        for pattern in ignore_patterns
    )


def download_file(request: urllib.request.Request, target: Path, relative: str) -> Path:
    """Stream the response of ``request`` to ``target/relative`` (no path may escape ``target``)."""
    destination = (target / relative).resolve()
    if target.resolve() not in destination.parents:
        raise ValueError(f"refusing to write {relative!r} outside {target}")
    destination.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(request, timeout=60) as response, open(destination, "wb") as stream:
        shutil.copyfileobj(response, stream)
    return destination
