"""One initializer run: the files at a storage URI (``hf://``, ``s3://``, a path) into a
directory, with the settings the upstream initializers read from their environment."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from trainer_sdk.initializers.huggingface import DEFAULT_ENDPOINT, download_huggingface
from trainer_sdk.initializers.local import copy_local
from trainer_sdk.initializers.s3 import download_s3
from trainer_sdk.manifests.storage import local_path

__all__ = ["UnknownSchemeError", "fetch"]


class UnknownSchemeError(ValueError):
    """A storage URI no initializer reads."""


def fetch(kind: str, uri: str, target: Path, environ: Mapping[str, str]) -> list[Path]:
    """The files of ``uri`` (a ``kind``: ``dataset`` or ``model``) into ``target``;
    ``UnknownSchemeError`` for a scheme no initializer reads. ``environ`` gives
    ``IGNORE_PATTERNS``, ``HF_ENDPOINT``, ``ACCESS_TOKEN`` and the S3 settings."""
    ignore = [pattern for pattern in environ.get("IGNORE_PATTERNS", "").split(",") if pattern]
    if uri.startswith("hf://"):
        return download_huggingface(
            uri,
            target,
            kind,
            environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT),
            environ.get("ACCESS_TOKEN"),
            ignore,
        )
    if local_path(uri) is not None:
        return copy_local(uri, target, ignore)
    if uri.startswith("s3://"):
        return download_s3(
            uri,
            target,
            environ.get("ENDPOINT"),
            environ.get("ACCESS_KEY_ID"),
            environ.get("SECRET_ACCESS_KEY"),
            environ.get("REGION"),
            ignore,
        )
    raise UnknownSchemeError(f"STORAGE_URI: expected hf://, s3:// or a path, got {uri!r}")
