"""What the local backend keeps on this machine beside its jobs, as the ``trainer volumes`` and
``trainer packages`` commands (and any tool) may use it: persistent volume claims and the cache of
installed ``packages_to_install`` sets. The public face of those backend modules: their layout
may change, these names stay."""

from __future__ import annotations

from trainer_sdk.backends.local.packages import CACHE_DIR, CacheEntry, cache_entries, prune_cache
from trainer_sdk.backends.local.volumes import (
    ClaimInUseError,
    ClaimVolume,
    InvalidVolumeError,
    delete_claim,
    list_claims,
)

__all__ = [
    "CACHE_DIR",
    "CacheEntry",
    "ClaimInUseError",
    "ClaimVolume",
    "InvalidVolumeError",
    "cache_entries",
    "delete_claim",
    "list_claims",
    "prune_cache",
]
