"""Resource arithmetic for plugins: per-pod requests, GPU and CPU counts, totals for PodGroups.

Quantities are ``trainer_api.Quantity`` (exact, canonical Kubernetes text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainer_api import Quantity

from trainer_runtime.errors import BuildError

__all__ = [
    "add_requests",
    "cpu_count",
    "gpu_count",
    "has_gpu",
    "pod_requests",
    "quantity",
    "scale_requests",
]


def quantity(value: Any) -> Quantity:
    """``value`` as a Quantity; BuildError names the value when it is not one."""
    try:
        return Quantity.parse(value if isinstance(value, int) else str(value))
    except ValueError as error:
        raise BuildError(
            f"resource quantity {value!r} is not a Kubernetes quantity: {error}"
        ) from None


def gpu_count(resources: Mapping[str, Any] | None) -> int:
    """GPUs per node: the largest ``*gpu*`` limit, else request (0 when none)."""
    resources = resources or {}
    for kind in ("limits", "requests"):
        found = [quantity(v) for k, v in (resources.get(kind) or {}).items() if "gpu" in k.lower()]
        if found:
            return max(found).value()
    return 0


def has_gpu(resources: Mapping[str, Any] | None) -> bool:
    """Whether any limit or request names a GPU resource."""
    resources = resources or {}
    return any(
        "gpu" in name.lower()
        for kind in ("limits", "requests")
        for name in resources.get(kind) or {}
    )


def cpu_count(resources: Mapping[str, Any] | None) -> int | None:
    """CPUs per node rounded up (at least 1): the CPU request, else the limit (upstream's order);
    None if neither is set (or only a zero request)."""
    resources = resources or {}
    for kind in ("requests", "limits"):
        cpu = (resources.get(kind) or {}).get("cpu")
        if cpu is not None and quantity(cpu).value() != 0:
            return max(1, quantity(cpu).value())
    return None


def _sum(into: dict[str, Quantity], name: str, amount: Quantity) -> None:
    into[name] = into[name] + amount if name in into else amount


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """What one pod requests: the sum over containers (a limit stands in for a missing request),
    at least the largest init container's, plus the pod overhead."""
    total: dict[str, Quantity] = {}
    for container in pod_spec.get("containers") or ():
        for name, amount in _container_requests(container).items():
            _sum(total, name, amount)
    for container in pod_spec.get("initContainers") or ():
        for name, amount in _container_requests(container).items():
            if name not in total or amount > total[name]:
                total[name] = amount
    for name, value in (pod_spec.get("overhead") or {}).items():
        _sum(total, name, quantity(value))
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, Quantity]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: quantity(value) for name, value in merged.items()}


def scale_requests(requests: Mapping[str, Quantity], count: int) -> dict[str, Quantity]:
    """``requests`` times ``count``."""
    return {name: amount * count for name, amount in requests.items()}


def add_requests(totals: Iterable[Mapping[str, Quantity]]) -> dict[str, str]:
    """The sum of several request maps, as canonical quantity strings (first-seen order)."""
    total: dict[str, Quantity] = {}
    for requests in totals:
        for name, amount in requests.items():
            _sum(total, name, amount)
    return {name: str(amount) for name, amount in total.items()}
