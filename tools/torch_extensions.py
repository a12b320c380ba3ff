"""A private torch C++-extension directory per test run, seeded from the shared one and published.

torch builds JIT extensions (DeepSpeed's CPU ops) in ``<root>/<python>/<op>`` under a lock file:
test runs that shared ``~/.cache/torch_extensions`` waited on each other's builds (minutes on two
cores) and, when one was killed, on its lock forever. A run builds in its own directory instead,
starting from copies of the ops already built (no build at all when nothing changed: ninja finds
the copies up to date), and publishes what it built by an atomic rename, never into an op
directory that another run is using.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["built_ops", "publish_built_ops", "seed_private_root", "shared_root"]


def shared_root() -> Path:
    """Where torch builds C++ extensions, as ``torch.utils.cpp_extension`` chooses it."""
    if root := os.environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(root)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "torch_extensions"


def built_ops(root: Path) -> list[Path]:
    """``<python>/<op>`` directories under ``root`` whose library is built and not being built."""
    return sorted(
        op.relative_to(root)
        for op in root.glob("*/*")
        if op.is_dir()
        and not op.name.startswith(".")
        and (op / f"{op.name}.so").is_file()
        and not (op / "lock").exists()
    )


def seed_private_root(shared: Path, private: Path) -> list[Path]:
    """Copy every built op of ``shared`` into ``private``; the ops copied."""
    copied = built_ops(shared) if shared.is_dir() else []
    for op in copied:
        # copy2 keeps modification times, so that ninja finds the copied build up to date.
        shutil.copytree(shared / op, private / op, copy_function=shutil.copy2, dirs_exist_ok=True)
    return copied


def publish_built_ops(private: Path, shared: Path) -> list[Path]:
    """Move ops built in ``private`` that ``shared`` lacks into it (rename: all or nothing)."""
    published = []
    for op in built_ops(private):
        target = shared / op
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.parent / f".{op.name}.{os.getpid()}"
        shutil.copytree(private / op, staging, copy_function=shutil.copy2)
        try:
            staging.rename(target)  # fails if another run published it meanwhile
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            continue
        published.append(op)
    return published
