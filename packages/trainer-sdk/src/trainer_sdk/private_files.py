"""Files only their user may read, written whole: what the local backend and the local
optimizer keep on disk (job state, plans, runtimes, optimization state).

A file is written to a temporary beside it and renamed over it, so a reader sees the old or the
new text, never half of one; a write that fails (a full disk) leaves no temporary behind and
raises.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "make_private_dir",
    "open_private",
    "read_json",
    "write_json",
    "write_text",
]

PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600


def make_private_dir(path: Path) -> None:
    """``mkdir -p`` with the directories it creates readable by this user only."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)


def open_private(path: Path) -> IO[bytes]:
    """``path`` opened for appending, created ``0600`` (its directory ``0700``) if new."""
    make_private_dir(path.parent)
    return os.fdopen(
        os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE),
        "ab",
    )


def write_text(path: Path, text: str, durable: bool = False) -> None:
    """Write atomically (readers see the old or the new text, never half of it), ``0600``; on
    failure the temporary is removed and the error raised. ``durable``: on disk before it
    replaces the old text (fsync of the file and its directory), so that a crash leaves one or
    the other, never an empty file."""
    make_private_dir(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def write_json(path: Path, document: Any, durable: bool = False) -> None:
    """Write ``document`` as JSON with ``write_text``."""
    write_text(path, json.dumps(document, indent=1, default=str), durable)


def read_json(path: Path) -> Any:
    """The document at ``path``."""
    return json.loads(path.read_text())
