"""The stand-in's state: objects, a global resourceVersion, watch history, garbage collection.

Synchronous and single-threaded: the HTTP layer (``server.py``) calls it from one event loop.
"""

from __future__ import annotations

import base64
import bisect
import copy
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kube_standin import patches, resources, selectors

__all__ = ["ApiError", "Store", "WatchEvent"]

Obj = dict[str, Any]
Key = tuple[str, str]  # (group, plural)


class ApiError(Exception):
    """An API failure with its HTTP status, reason and message, rendered as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def to_status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


@dataclass(frozen=True)
class WatchEvent:
    """One change, as every watch of its resource sees it."""

    resource_version: int
    type: str  # ADDED, MODIFIED, DELETED
    key: Key
    obj: Obj


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found(rtype: resources.ResourceType, name: str) -> ApiError:
    noun = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    return ApiError(404, "NotFound", f'{noun} "{name}" not found')


def _conflict(rtype: resources.ResourceType, name: str) -> ApiError:
    noun = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {noun} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
    )


def _check_version(rtype: resources.ResourceType, current: Obj, wanted: Any) -> None:
    """409 when the writer names a resourceVersion that is no longer current."""
    if wanted and wanted != current["metadata"]["resourceVersion"]:
        raise _conflict(rtype, current["metadata"]["name"])


def _spec_part(obj: Mapping[str, Any], status: bool) -> Obj:
    """What counts towards metadata.generation: all but metadata (and a separate status)."""
    return {
        key: value
        for key, value in obj.items()
        if key != "metadata" and not (status and key == "status")
    }


def _normalize(rtype: resources.ResourceType, obj: Obj) -> None:
    """What the API server does to every stored object: a Secret's stringData moves to data."""
    if (rtype.group, rtype.plural) == ("", "secrets") and "stringData" in obj:
        data = obj.setdefault("data", {})
        for key, value in (obj.pop("stringData") or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()


class Store:
    """In-memory objects with server-assigned metadata, 409s, status separation, apply and GC."""

    def __init__(self, clock: Callable[[], datetime] | None = None, history: int = 200_000) -> None:
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._history = history
        self._types: dict[tuple[str, str, str], resources.ResourceType] = {}
        self._objects: dict[Key, dict[tuple[str, str], Obj]] = {}
        self._owners: dict[tuple[str, str], dict[str, set[patches.Path]]] = {}  # (uid, subresource)
        self._events: list[WatchEvent] = []
        self._listeners: list[Callable[[], None]] = []
        self.resource_version = 1
        self.writes: Counter[tuple[str, str, str]] = Counter()  # (verb, plural, subresource)
        for rtype in resources.BUILTIN_TYPES:
            self.register(rtype)
        for name in ("default", "kube-system"):
            self.create(self.type_of("", "v1", "namespaces"), "", {"metadata": {"name": name}})
        self.writes.clear()

    # -- types ------------------------------------------------------------------------------------

    def register(self, rtype: resources.ResourceType) -> None:
        self._types[(rtype.group, rtype.version, rtype.plural)] = rtype
        self._objects.setdefault((rtype.group, rtype.plural), {})

    def types(self) -> list[resources.ResourceType]:
        return list(self._types.values())

    def type_of(self, group: str, version: str, plural: str) -> resources.ResourceType:
        try:
            return self._types[(group, version, plural)]
        except KeyError:
            raise ApiError(
                404,
                "NotFound",
                f"the server could not find the requested resource "
                f"({group or 'core'}/{version} {plural})",
            ) from None

    # -- watch history ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after every change; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def oldest_resource_version(self) -> int:
        return self._events[0].resource_version - 1 if self._events else self.resource_version

    def events_since(self, resource_version: int) -> Iterator[WatchEvent]:
        """Events after ``resource_version``; raises 410 Gone when history no longer reaches it."""
        if resource_version < self.oldest_resource_version():
            raise ApiError(
                410,
                "Expired",
                f"too old resource version: {resource_version} ({self.oldest_resource_version()})",
            )
        start = bisect.bisect_right(
            self._events, resource_version, key=lambda event: event.resource_version
        )
        yield from self._events[start:]

    def _record(self, kind: str, key: Key, obj: Obj) -> None:
        self._events.append(WatchEvent(self.resource_version, kind, key, copy.deepcopy(obj)))
        if len(self._events) > self._history:
            del self._events[: len(self._events) - self._history]
        for listener in list(self._listeners):
            listener()

    def _bump(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    # -- reads ------------------------------------------------------------------------------------

    def _bucket(self, rtype: resources.ResourceType) -> dict[tuple[str, str], Obj]:
        return self._objects[(rtype.group, rtype.plural)]

    def _view(self, rtype: resources.ResourceType, obj: Obj) -> Obj:
        view = copy.deepcopy(obj)
        view["apiVersion"] = rtype.api_version
        return view

    def count(self, rtype: resources.ResourceType) -> int:
        """How many objects of the type exist, in every namespace."""
        return len(self._bucket(rtype))

    def exists(self, rtype: resources.ResourceType, namespace: str, name: str) -> bool:
        return (namespace if rtype.namespaced else "", name) in self._bucket(rtype)

    def get(self, rtype: resources.ResourceType, namespace: str, name: str) -> Obj:
        obj = self._bucket(rtype).get((namespace if rtype.namespaced else "", name))
        if obj is None:
            raise _not_found(rtype, name)
        return self._view(rtype, obj)

    def list(
        self,
        rtype: resources.ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[Obj], str]:
        labels = selectors.parse_label_selector(label_selector)
        fields = selectors.parse_field_selector(field_selector)
        items = [
            self._view(rtype, obj)
            for (object_namespace, _), obj in sorted(self._bucket(rtype).items())
            if (not namespace or object_namespace == namespace) and labels(obj) and fields(obj)
        ]
        return items, str(self.resource_version)

    def matches(
        self,
        event: WatchEvent,
        rtype: resources.ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
    ) -> bool:
        """Whether a watch of rtype/namespace/selectors sees the event."""
        if event.key != (rtype.group, rtype.plural):
            return False
        if namespace and event.obj["metadata"].get("namespace") != namespace:
            return False
        return selectors.parse_label_selector(label_selector)(
            event.obj
        ) and selectors.parse_field_selector(field_selector)(event.obj)

    # -- writes -----------------------------------------------------------------------------------

    def _check_namespace(
        self, rtype: resources.ResourceType, namespace: str, body: Mapping[str, Any]
    ) -> str:
        body_namespace = (body.get("metadata") or {}).get("namespace")
        if not rtype.namespaced:
            return ""
        if body_namespace and namespace and body_namespace != namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match "
                "the namespace sent on the request",
            )
        namespace = namespace or body_namespace or ""
        if not namespace:
            raise ApiError(
                400, "BadRequest", "metadata.namespace: a namespaced resource needs a namespace"
            )
        if ("", namespace) not in self._objects[("", "namespaces")]:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        return namespace

    def create(
        self,
        rtype: resources.ResourceType,
        namespace: str,
        body: Mapping[str, Any],
        verb: str = "create",
    ) -> Obj:
        namespace = self._check_namespace(rtype, namespace, body)
        obj = copy.deepcopy(dict(body))
        metadata = obj.setdefault("metadata", {})
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise ApiError(
                    422,
                    "Invalid",
                    "metadata.name: Required value: name or generateName is required",
                )
            metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
        name = metadata["name"]
        bucket = self._bucket(rtype)
        if (namespace, name) in bucket:
            noun = f"{rtype.plural}.{rtype.group}" if rtype.group else rtype.plural
            raise ApiError(409, "AlreadyExists", f'{noun} "{name}" already exists')
        if rtype.status:
            obj.pop("status", None)
        for field in ("resourceVersion", "deletionTimestamp", "managedFields"):
            metadata.pop(field, None)
        if namespace:
            metadata["namespace"] = namespace
        metadata.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=_rfc3339(self._clock()),
            generation=1,
            resourceVersion=self._bump(),
        )
        obj["kind"], obj["apiVersion"] = rtype.kind, rtype.api_version
        _normalize(rtype, obj)
        if rtype.plural == "customresourcedefinitions":
            self._establish(obj)
        bucket[(namespace, name)] = obj
        self.writes[(verb, rtype.plural, "")] += 1
        self._record("ADDED", (rtype.group, rtype.plural), obj)
        return self._view(rtype, obj)

    def _establish(self, crd: Obj) -> None:
        try:
            new_types = resources.types_from_crd(crd)
        except ValueError as error:
            raise ApiError(422, "Invalid", str(error)) from error
        for rtype in new_types:
            self.register(rtype)
        crd["status"] = {
            "conditions": [
                {"type": "Established", "status": "True"},
                {"type": "NamesAccepted", "status": "True"},
            ],
            "acceptedNames": crd["spec"]["names"],
        }

    def _stored(self, rtype: resources.ResourceType, namespace: str, name: str) -> Obj:
        obj = self._bucket(rtype).get((namespace if rtype.namespaced else "", name))
        if obj is None:
            raise _not_found(rtype, name)
        return obj

    def replace(
        self,
        rtype: resources.ResourceType,
        namespace: str,
        name: str,
        body: Mapping[str, Any],
        subresource: str = "",
        verb: str = "update",
    ) -> Obj:
        """PUT: optimistic concurrency on metadata.resourceVersion when the body carries one."""
        current = self._stored(rtype, namespace, name)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        _check_version(rtype, current, wanted)
        if (body.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "BadRequest", "metadata.name: does not match the name in the URL")
        return self._commit(rtype, current, dict(body), subresource, verb)

    def _commit(
        self,
        rtype: resources.ResourceType,
        current: Obj,
        proposed: Obj,
        subresource: str,
        verb: str,
        owners: dict[str, set[patches.Path]] | None = None,
        manager: str = "",
    ) -> Obj:
        """Store ``proposed`` over ``current`` (status kept apart); no-op writes change nothing."""
        metadata = current["metadata"]
        if subresource == "status":
            updated = copy.deepcopy(current)
            if "status" in proposed:
                updated["status"] = copy.deepcopy(proposed["status"])
            else:
                updated.pop("status", None)
        else:
            updated = copy.deepcopy(proposed)
            if rtype.status:
                updated.pop("status", None)
                if "status" in current:
                    updated["status"] = copy.deepcopy(current["status"])
            new_metadata = updated.setdefault("metadata", {})
            for field in (
                "uid",
                "creationTimestamp",
                "namespace",
                "name",
                "generation",
                "deletionTimestamp",
                "managedFields",
            ):
                if field in metadata:
                    new_metadata[field] = metadata[field]
                else:
                    new_metadata.pop(field, None)
            new_metadata["resourceVersion"] = metadata["resourceVersion"]
        updated["kind"], updated["apiVersion"] = rtype.kind, rtype.api_version
        _normalize(rtype, updated)
        if owners is not None:
            self._set_owners(updated, owners, subresource, manager)
        if updated == current:
            return self._view(rtype, current)
        if _spec_part(updated, rtype.status) != _spec_part(current, rtype.status):
            updated["metadata"]["generation"] = metadata.get("generation", 1) + 1
        updated["metadata"]["resourceVersion"] = self._bump()
        key = (metadata.get("namespace", ""), metadata["name"])
        self._bucket(rtype)[key] = updated
        self.writes[(verb, rtype.plural, subresource)] += 1
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get(
            "finalizers"
        ):
            self._remove(rtype, key)
        else:
            self._record("MODIFIED", (rtype.group, rtype.plural), updated)
        return self._view(rtype, updated)

    def _set_owners(
        self, obj: Obj, owners: dict[str, set[patches.Path]], subresource: str, manager: str
    ) -> None:
        self._owners[(obj["metadata"]["uid"], subresource)] = owners
        fields = [
            entry
            for entry in obj["metadata"].get("managedFields", [])
            if entry.get("operation") != "Apply" or entry.get("subresource", "") != subresource
        ]
        for name, owned in sorted(owners.items()):
            previous = next(
                (
                    entry
                    for entry in obj["metadata"].get("managedFields", [])
                    if entry.get("manager") == name
                    and entry.get("operation") == "Apply"
                    and entry.get("subresource", "") == subresource
                ),
                None,
            )
            entry = {
                "manager": name,
                "operation": "Apply",
                "apiVersion": obj["apiVersion"],
                "time": previous["time"]
                if previous and name != manager
                else _rfc3339(self._clock()),
                "fieldsType": "FieldsV1",
                "fieldsV1": patches.encode_fields(owned),
            }
            if subresource:
                entry["subresource"] = subresource
            fields.append(entry)
        obj["metadata"]["managedFields"] = fields

    def patch(
        self,
        rtype: resources.ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        subresource: str = "",
        manager: str = "",
        force: bool = False,
    ) -> Obj:
        """PATCH by content type: merge, strategic (as merge), JSON patch, or server-side apply."""
        if patch_type == "apply":
            return self.apply(rtype, namespace, name, patch, subresource, manager, force)
        current = self._stored(rtype, namespace, name)
        try:
            if patch_type == "json":
                if not isinstance(patch, list):
                    raise patches.PatchError("a JSON patch is a list of operations")
                proposed = patches.json_patch(current, patch)
            else:
                if not isinstance(patch, Mapping):
                    raise patches.PatchError("a merge patch is a JSON object")
                proposed = patches.merge_patch(current, patch)
        except patches.PatchError as error:
            raise ApiError(422, "Invalid", str(error)) from error
        wanted = (
            (patch.get("metadata") or {}).get("resourceVersion")
            if isinstance(patch, Mapping)
            else None
        )
        _check_version(rtype, current, wanted)
        return self._commit(rtype, current, proposed, subresource, "patch")

    def apply(
        self,
        rtype: resources.ResourceType,
        namespace: str,
        name: str,
        applied: Mapping[str, Any],
        subresource: str = "",
        manager: str = "",
        force: bool = False,
    ) -> Obj:
        """Server-side apply: create when absent, else merge with field ownership (``patches``)."""
        if not manager:
            raise ApiError(400, "BadRequest", "fieldManager: required for apply patch")
        if (
            not isinstance(applied, Mapping)
            or (applied.get("metadata") or {}).get("name", name) != name
        ):
            raise ApiError(
                400,
                "BadRequest",
                "metadata.name: the applied object must name the object in the URL",
            )
        if applied.get("kind") not in (None, rtype.kind):
            raise ApiError(
                400, "BadRequest", f"kind: expected {rtype.kind}, got {applied.get('kind')!r}"
            )
        key_namespace = namespace if rtype.namespaced else ""
        if (key_namespace, name) not in self._bucket(rtype):
            if subresource:
                raise _not_found(rtype, name)
            self.create(
                rtype,
                namespace,
                {**applied, "metadata": {**applied.get("metadata", {}), "name": name}},
                verb="apply",
            )
            stored = self._stored(rtype, namespace, name)
            self._set_owners(stored, {manager: patches.field_paths(applied)}, "", manager)
            return self._view(rtype, stored)
        current = self._stored(rtype, namespace, name)
        wanted = (applied.get("metadata") or {}).get("resourceVersion")
        _check_version(rtype, current, wanted)
        owners = self._owners.get((current["metadata"]["uid"], subresource), {})
        scope = {"status": applied.get("status", {})} if subresource == "status" else applied
        if rtype.status and not subresource:
            scope = {key: value for key, value in applied.items() if key != "status"}
        try:
            proposed, new_owners = patches.server_side_apply(current, scope, owners, manager, force)
        except patches.ApplyConflictError as error:
            raise ApiError(
                409, "Conflict", f"Apply failed with {len(error.conflicts)} conflict(s): {error}"
            ) from error
        return self._commit(rtype, current, proposed, subresource, "apply", new_owners, manager)

    def delete(
        self,
        rtype: resources.ResourceType,
        namespace: str,
        name: str,
        propagation: str = "Background",
        resource_version: str | None = None,
    ) -> Obj:
        """Delete now, or mark while finalizers remain; dependents follow (or are orphaned)."""
        current = self._stored(rtype, namespace, name)
        _check_version(rtype, current, resource_version)
        self.writes[("delete", rtype.plural, "")] += 1
        key = (current["metadata"].get("namespace", ""), name)
        if propagation == "Orphan":
            self._orphan(current["metadata"]["uid"])
        if current["metadata"].get("finalizers"):
            if current["metadata"].get("deletionTimestamp"):
                return self._view(rtype, current)
            marked = copy.deepcopy(current)
            marked["metadata"]["deletionTimestamp"] = _rfc3339(self._clock())
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            marked["metadata"]["resourceVersion"] = self._bump()
            self._bucket(rtype)[key] = marked
            self._record("MODIFIED", (rtype.group, rtype.plural), marked)
            return self._view(rtype, marked)
        return self._remove(rtype, key)

    def _remove(self, rtype: resources.ResourceType, key: tuple[str, str]) -> Obj:
        obj = self._bucket(rtype).pop(key)
        obj["metadata"]["resourceVersion"] = self._bump()
        uid = obj["metadata"]["uid"]
        self._owners.pop((uid, ""), None)
        self._owners.pop((uid, "status"), None)
        self._record("DELETED", (rtype.group, rtype.plural), obj)
        if rtype.plural == "namespaces":
            self._purge_namespace(key[1])
        self._collect(uid)
        return self._view(rtype, obj)

    def _all_types(self) -> dict[Key, resources.ResourceType]:
        return {(rtype.group, rtype.plural): rtype for rtype in self._types.values()}

    def _purge_namespace(self, namespace: str) -> None:
        for bucket_key, rtype in self._all_types().items():
            for key in [
                key for key in self._objects[bucket_key] if key[0] == namespace and rtype.namespaced
            ]:
                if key in self._objects[bucket_key]:
                    self._remove(rtype, key)

    def _dependents(
        self, uid: str
    ) -> Iterator[tuple[resources.ResourceType, tuple[str, str], Obj]]:
        for bucket_key, rtype in self._all_types().items():
            for key, obj in list(self._objects[bucket_key].items()):
                if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences", [])):
                    yield rtype, key, obj

    def _collect(self, uid: str) -> None:
        """Garbage collection: drop the owner reference; delete dependents with no owner left."""
        for rtype, key, obj in list(self._dependents(uid)):
            if key not in self._bucket(rtype):
                continue
            remaining = [ref for ref in obj["metadata"]["ownerReferences"] if ref.get("uid") != uid]
            if remaining:
                self._commit(
                    rtype,
                    obj,
                    {**obj, "metadata": {**obj["metadata"], "ownerReferences": remaining}},
                    "",
                    "gc",
                )
            else:
                self.delete(rtype, key[0], key[1])

    def _orphan(self, uid: str) -> None:
        for rtype, _, obj in list(self._dependents(uid)):
            remaining = [ref for ref in obj["metadata"]["ownerReferences"] if ref.get("uid") != uid]
            metadata = {
                key: value for key, value in obj["metadata"].items() if key != "ownerReferences"
            }
            if remaining:
                metadata["ownerReferences"] = remaining
            self._commit(rtype, obj, {**obj, "metadata": metadata}, "", "gc")
