"""Repository-wide test setup: nothing a crashed earlier run left behind may make a test wait."""

from __future__ import annotations

import time

import pytest
from build_locks import remove_stale_build_locks, torch_extensions_root

# No extension build takes this long, even on a loaded 2-core machine (about 8 minutes there).
STALE_BUILD_LOCK_SECONDS = 30 * 60


@pytest.fixture(scope="session", autouse=True)
def _no_stale_torch_extension_locks() -> None:
    root = torch_extensions_root()
    for lock in remove_stale_build_locks(root, time.time(), STALE_BUILD_LOCK_SECONDS):
        print(f"removed a stale torch extension build lock: {lock}")
