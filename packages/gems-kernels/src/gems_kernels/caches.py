"""Persistent caches under ``GEMS_CACHE_DIR``: generated kernel sources and tuning results.

Every write goes to a temporary file in the same directory and is renamed into place, so readers
in other processes see either nothing or a whole file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import triton

__all__ = ["atomic_write", "cache_dir", "cache_key", "tuned"]

_TUNED: dict[str, Any] = {}


def cache_dir() -> Path:
    """``GEMS_CACHE_DIR``, else ``~/.cache/gems_kernels``; created on demand."""
    root = os.environ.get("GEMS_CACHE_DIR") or str(Path.home() / ".cache" / "gems_kernels")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: str) -> str:
    """A hash of ``parts`` and the Triton version, usable as a file name."""
    digest = hashlib.sha256()
    for part in (triton.__version__, *parts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that no reader ever sees a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def tuned(
    source: str,
    device: str,
    candidates: Sequence[Any],
    measure: Callable[[Any], float],
) -> Any:
    """The fastest of ``candidates`` by ``measure`` (seconds), remembered on disk.

    The key is the kernel ``source`` hash, the Triton version and ``device``; a later call, in this
    or another process, returns the stored choice without measuring again.
    """
    if not candidates:
        raise ValueError("candidates: expected at least one configuration")
    key = cache_key(source, device, repr(list(candidates)))
    if key in _TUNED:
        return _TUNED[key]
    path = cache_dir() / "tuning" / f"{key}.json"
    if path.exists():
        index = json.loads(path.read_text())["index"]
    else:
        timings = [measure(candidate) for candidate in candidates]
        index = min(range(len(candidates)), key=timings.__getitem__)
        atomic_write(path, json.dumps({"index": index, "timings": timings}))
    _TUNED[key] = candidates[index]
    return candidates[index]
