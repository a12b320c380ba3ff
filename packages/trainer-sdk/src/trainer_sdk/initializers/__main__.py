"""``python -m trainer_sdk.initializers dataset|model TARGET``: run one initializer from env
(``STORAGE_URI``: ``hf://``, ``s3://``, or a path: ``file:///...`` or ``/...``, where the runtime
mounted a ``pvc://`` claim)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from trainer_sdk.initializers.huggingface import DEFAULT_ENDPOINT, download_huggingface
from trainer_sdk.initializers.local import copy_local
from trainer_sdk.initializers.s3 import download_s3
from trainer_sdk.manifests.storage import local_path


def main(argv: list[str]) -> int:
    """Download ``STORAGE_URI`` into TARGET; non-zero with a message on failure."""
    if len(argv) != 2 or argv[0] not in ("dataset", "model"):
        print("usage: python -m trainer_sdk.initializers dataset|model TARGET", file=sys.stderr)
        return 2
    kind, target = argv[0], Path(argv[1])
    uri = os.environ.get("STORAGE_URI", "")
    ignore = [pattern for pattern in os.environ.get("IGNORE_PATTERNS", "").split(",") if pattern]
    if uri.startswith("hf://"):
        files = download_huggingface(
            uri,
            target,
            kind,
            os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT),
            os.environ.get("ACCESS_TOKEN"),
            ignore,
        )
    elif local_path(uri) is not None:
        files = copy_local(uri, target, ignore)
    elif uri.startswith("s3://"):
        files = download_s3(
            uri,
            target,
            os.environ.get("ENDPOINT"),
            os.environ.get("ACCESS_KEY_ID"),
            os.environ.get("SECRET_ACCESS_KEY"),
            os.environ.get("REGION"),
            ignore,
        )
    else:
        print(f"STORAGE_URI: expected hf://, s3:// or a path, got {uri!r}", file=sys.stderr)
        return 2
    print(f"{kind} initializer: {len(files)} files from {uri} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
