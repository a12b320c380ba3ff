"""Strategic merge of manifest dicts, as Kubernetes merges a patch into an object.

Maps merge key by key; a ``None`` value in the patch deletes the key. Lists whose field has a
merge key (``containers`` by ``name``, ``volumeMounts`` by ``mountPath``, ...) merge item by item:
an item whose key matches is merged in place, a new item is appended, and the original order is
kept. Every other list, and every scalar, is replaced by the patch's value. Inputs are never
mutated.
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
    items = list(original)
    index = {
        item.get(merge_key): position
        for position, item in enumerate(items)
        if isinstance(item, Mapping)
    }
    for patch_item in patch:
        if not isinstance(patch_item, Mapping) or patch_item.get(merge_key) is None:
            items.append(copy.deepcopy(patch_item))
            continue
        position = index.get(patch_item[merge_key])
        if position is None:
            index[patch_item[merge_key]] = len(items)
            items.append(copy.deepcopy(dict(patch_item)))
        else:
            items[position] = strategic_merge(items[position], patch_item)
    return items
