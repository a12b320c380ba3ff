"""Strategic merge of manifest dicts, as Kubernetes merges a patch into an object.

Maps merge key by key; a ``None`` value in the patch deletes the key. Lists whose field has a
merge key (``containers`` by ``name``, ``volumeMounts`` by ``mountPath``, ...) merge item by item:
an item whose key matches is merged with it, a new item is added. The result is ordered as
Kubernetes' strategic merge orders it: the patch's items in the patch's order, and each item only
the original has placed before the first patch item that the original holds after it (so
``INIT_ENV, DATASET_PATH`` patched with ``INIT_ENV, NEW_VALUE`` reads ``INIT_ENV, NEW_VALUE,
DATASET_PATH``, as upstream's JobSet does). Every other list, and every scalar, is replaced by
the patch's value. Inputs are never mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["MERGE_KEYS", "strategic_merge"]

# Field name -> the key that identifies an item of that list (Kubernetes' patchMergeKey, plus
# JobSet's replicatedJobs).
MERGE_KEYS: Final[Mapping[str, str]] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}


def strategic_merge(original: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``original`` with ``patch`` merged into it (neither argument is changed)."""
    merged: dict[str, Any] = copy.deepcopy(dict(original))
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = strategic_merge(merged[key], value)
        elif (
            key in MERGE_KEYS and isinstance(value, Sequence) and isinstance(merged.get(key), list)
        ):
            merged[key] = _merge_list(merged[key], value, MERGE_KEYS[key])
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _merge_list(original: list[Any], patch: Sequence[Any], merge_key: str) -> list[Any]:
    keyed = {
        item[merge_key]: item
        for item in original
        if isinstance(item, Mapping) and item.get(merge_key) is not None
    }
    server_order = {key: position for position, key in enumerate(keyed)}
    patched: dict[Any, Any] = {}
    unkeyed: list[Any] = []
    for patch_item in patch:
        key = patch_item.get(merge_key) if isinstance(patch_item, Mapping) else None
        if key is None:
            unkeyed.append(copy.deepcopy(patch_item))
            continue
        base = patched.get(key, keyed.get(key, {}))
        patched[key] = strategic_merge(base, patch_item)
    server_only = [
        copy.deepcopy(item)
        for item in original
        if not isinstance(item, Mapping) or item.get(merge_key) not in patched
    ]
    return _interleave(server_only, list(patched.items()), server_order, merge_key) + unkeyed


def _interleave(
    server_only: list[Any],
    patched: list[tuple[Any, Any]],
    server_order: Mapping[Any, int],
    merge_key: str,
) -> list[Any]:
    """Patch items in order; a server-only item goes first only while the original has it
    before the next patch item (Kubernetes' ``mergeSortedSlice``)."""
    merged: list[Any] = []
    left, right = 0, 0
    while left < len(server_only) or right < len(patched):
        if right == len(patched):
            merged.append(server_only[left])
            left += 1
            continue
        if left < len(server_only):
            item = server_only[left]
            key = item.get(merge_key) if isinstance(item, Mapping) else None
            mine, theirs = server_order.get(key), server_order.get(patched[right][0])
            if mine is not None and theirs is not None and mine < theirs:
                merged.append(item)
                left += 1
                continue
        merged.append(patched[right][1])
        right += 1
    return merged
