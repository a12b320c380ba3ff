"""Where a remote ``load`` may read from: the head's load roots.

A root is a local directory or a URI prefix (``s3://bucket/datasets``). A local path is
within a root when its real path (symlinks resolved) is the root's real path or lies under it;
a URI when it has the root's scheme and host, no ``.``/``..`` segment, query or fragment, and
its path is the root's path or lies under it. A local source's files are checked again once
found, so a symlink inside a root cannot lead outside it. Not checked: the data files an
Iceberg table's metadata names (its metadata file itself is).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from trainer_data_cache.errors import AccessDeniedError, InvalidArgumentError
from trainer_data_cache.sources import ResolvedSource

__all__ = ["LoadRoots"]


@dataclass(frozen=True)
class LoadRoots:
    """The roots a remote load must stay within; none means remote loads are off."""

    roots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for root in self.roots:
            if not isinstance(root, str) or not root:
                raise InvalidArgumentError(f"load_roots: expected paths or URIs, got {root!r}")

    def check_paths(self, paths: Sequence[str]) -> None:
        """Raise AccessDeniedError for the first path outside every root."""
        if not self.roots:
            raise AccessDeniedError(
                "action 'load': remote loads are off: the head has no load roots"
            )
        for path in paths:
            if not any(_within(path, root) for root in self.roots):
                raise AccessDeniedError(
                    f"paths: {path!r} is outside the head's load roots {list(self.roots)}"
                )

    def check_source(self, source: ResolvedSource) -> None:
        """Raise AccessDeniedError for a file of a local source outside every root."""
        if not isinstance(source.filesystem, pafs.LocalFileSystem):
            return
        self.check_paths(list(source.files))


def _within(path: str, root: str) -> bool:
    if "\0" in path:
        return False
    local_path, local_root = _local(path), _local(root)
    if local_path is not None or local_root is not None:
        if local_path is None or local_root is None:
            return False
        real_root = os.path.realpath(local_root)
        real = os.path.realpath(local_path)
        return os.path.commonpath([real, real_root]) == real_root
    wanted, allowed = urlsplit(path), urlsplit(root)
    if wanted.query or wanted.fragment or "?" in path or "#" in path:
        return False
    segments = wanted.path.split("/")
    if any(segment in (".", "..") for segment in segments):
        return False
    prefix = allowed.path.rstrip("/")
    return (wanted.scheme, wanted.netloc) == (allowed.scheme, allowed.netloc) and (
        wanted.path == prefix or wanted.path.startswith(prefix + "/")
    )


def _local(path: str) -> str | None:
    """The local file system path ``path`` names (a plain path or ``file://``), else None."""
    if "://" not in path:
        return path
    parts = urlsplit(path)
    return parts.path if parts.scheme == "file" and parts.netloc in ("", "localhost") else None
