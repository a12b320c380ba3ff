"""Build locks that a killed torch C++-extension build (DeepSpeed's CPU ops) leaves behind.

torch holds ``<extensions root>/<python>/<op>/lock`` while it compiles an op; a build killed midway
leaves it, and every later load of that op then waits for it forever.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["remove_stale_build_locks", "torch_extensions_root"]


def torch_extensions_root() -> Path:
    """Where torch builds C++ extensions, as ``torch.utils.cpp_extension`` chooses it."""
    if root := os.environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(root)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "torch_extensions"


def remove_stale_build_locks(root: Path, now: float, max_age: float) -> list[Path]:
    """Delete ``lock`` files under ``root`` older than ``max_age`` seconds; the ones deleted."""
    stale = [lock for lock in root.glob("*/*/lock") if now - lock.stat().st_mtime > max_age]
    for lock in stale:
        lock.unlink(missing_ok=True)
    return stale
