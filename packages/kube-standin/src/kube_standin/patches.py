"""Patch arithmetic: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and server-side apply.

Server-side apply here tracks field ownership per ``Apply`` manager with lists treated as atomic
values (a real API server merges lists by their keys). That is enough for one controller owning
the objects it applies, for force/conflict semantics between managers, and for removing a field a
manager stops applying.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ApplyConflictError",
    "PatchError",
    "apply_fields",
    "decode_fields",
    "encode_fields",
    "field_paths",
    "json_patch",
    "merge_patch",
    "server_side_apply",
]

Path = tuple[str, ...]
_IDENTITY_FIELDS = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
_SERVER_FIELDS = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "selfLink",
)


class PatchError(ValueError):
    """A patch that cannot be applied to the object (HTTP 422)."""


class ApplyConflictError(Exception):
    """Fields another manager owns with a different value (HTTP 409 unless forced)."""

    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        self.conflicts = conflicts
        super().__init__(
            "; ".join(
                f'conflict with "{manager}": .{".".join(path)}' for manager, path in conflicts
            )
        )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, everything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"path {path!r}: a JSON pointer starts with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _resolve(document: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(document, list):
            try:
                document = document[int(part)]
            except (ValueError, IndexError) as error:
                raise PatchError(f"path {path!r}: no element {part!r}") from error
        elif isinstance(document, dict) and part in document:
            document = document[part]
        else:
            raise PatchError(f"path {path!r}: no member {part!r}")
    return document


def _remove(document: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchError("path '': cannot remove the whole document")
    parent = _resolve(document, parts[:-1], path)
    try:
        return parent.pop(int(parts[-1]) if isinstance(parent, list) else parts[-1])
    except (KeyError, IndexError, ValueError) as error:
        raise PatchError(f"path {path!r}: nothing to remove") from error


def _add(document: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _resolve(document, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise PatchError(f"path {path!r}: index out of range")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"path {path!r}: parent is not a container")
    return document


def json_patch(document: Any, operations: Iterable[Mapping[str, Any]]) -> Any:
    """RFC 6902 operations add, remove, replace, move, copy and test, applied in order."""
    result = copy.deepcopy(document)
    for index, operation in enumerate(operations):
        op, path = operation.get("op"), operation.get("path")
        if not isinstance(path, str):
            raise PatchError(f"[{index}].path: required string")
        if op == "add":
            result = _add(result, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            _remove(result, path)
        elif op == "replace":
            _remove(result, path)
            result = _add(result, path, copy.deepcopy(operation.get("value")))
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise PatchError(f"[{index}].from: required string")
            value = (
                _remove(result, source)
                if op == "move"
                else copy.deepcopy(_resolve(result, _pointer(source), source))
            )
            result = _add(result, path, value)
        elif op == "test":
            if _resolve(result, _pointer(path), path) != operation.get("value"):
                raise PatchError(f"[{index}]: test failed at {path!r}")
        else:
            raise PatchError(f"[{index}].op: unknown operation {op!r}")
    return result


def field_paths(obj: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    """The leaf paths of an applied configuration (lists and empty objects are leaves)."""
    paths: set[Path] = set()
    for key, value in obj.items():
        path = (*prefix, key)
        if prefix == ("metadata",) and key in _SERVER_FIELDS:
            continue
        if isinstance(value, Mapping) and value:
            paths |= field_paths(value, path)
        elif path not in _IDENTITY_FIELDS:
            paths.add(path)
    return paths


def encode_fields(paths: Iterable[Path]) -> dict[str, Any]:
    """Paths as a FieldsV1 tree (``{"f:spec": {"f:replicas": {}}}``)."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return tree


def decode_fields(tree: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    """The inverse of :func:`encode_fields`."""
    paths: set[Path] = set()
    for key, child in tree.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        paths |= decode_fields(child, path) if child else {path}
    return paths


def _get(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _delete(obj: dict[str, Any], path: Path, keep: set[Path]) -> None:
    """Delete the leaf at path, then parents left empty that nobody keeps."""
    parents = [obj]
    for part in path[:-1]:
        child = parents[-1].get(part)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        prefix = path[:depth]
        if parents[depth] or any(kept[:depth] == prefix for kept in keep):
            break
        parents[depth - 1].pop(path[depth - 1], None)


_MISSING = object()


def apply_fields(current: Mapping[str, Any], applied: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge an applied configuration into an object (lists and scalars replace)."""
    result = copy.deepcopy(dict(current))
    for key, value in applied.items():
        if isinstance(value, Mapping) and value and isinstance(result.get(key), dict):
            result[key] = apply_fields(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def server_side_apply(
    current: Mapping[str, Any],
    applied: Mapping[str, Any],
    owners: Mapping[str, set[Path]],
    manager: str,
    force: bool,
) -> tuple[dict[str, Any], dict[str, set[Path]]]:
    """Apply ``applied`` as ``manager``: the new object and every manager's new field set.

    ``owners`` maps each Apply manager to the paths it owns. A path owned by another manager with
    a different value is a conflict (raised unless ``force``, which takes ownership); a path this
    manager owned before and no longer applies is removed unless another manager still owns it.
    """
    paths = field_paths(applied)
    owners = {name: set(owned) for name, owned in owners.items()}
    conflicts = sorted(
        (other, path)
        for other, owned in owners.items()
        if other != manager
        for path in paths & owned
        if _get(current, path) != _get(applied, path)
    )
    if conflicts and not force:
        raise ApplyConflictError(conflicts)
    for other, path in conflicts:
        owners[other].discard(path)
    result = copy.deepcopy(dict(current))
    still_owned = set().union(*(owned for other, owned in owners.items() if other != manager))
    for path in sorted(owners.get(manager, set()) - paths - still_owned, key=len, reverse=True):
        _delete(result, path, paths | still_owned)
    owners[manager] = paths
    return apply_fields(result, applied), {name: owned for name, owned in owners.items() if owned}
