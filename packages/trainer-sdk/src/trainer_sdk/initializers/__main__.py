"""``python -m trainer_sdk.initializers dataset|model TARGET``: run one initializer from env
(``STORAGE_URI``: ``hf://``, ``s3://``, or a path: ``file:///...`` or ``/...``, where the runtime
mounted a ``pvc://`` claim)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from trainer_sdk.initializers.fetch import UnknownSchemeError, fetch


def main(argv: list[str]) -> int:
    """Download ``STORAGE_URI`` into TARGET; non-zero with a message on failure."""
    if len(argv) != 2 or argv[0] not in ("dataset", "model"):
        print("usage: python -m trainer_sdk.initializers dataset|model TARGET", file=sys.stderr)
        return 2
    kind, target = argv[0], Path(argv[1])
    uri = os.environ.get("STORAGE_URI", "")
    try:
        files = fetch(kind, uri, target, os.environ)
    except UnknownSchemeError as error:
        print(error, file=sys.stderr)
        return 2
    print(f"{kind} initializer: {len(files)} files from {uri} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
