"""Resource arithmetic for plugins: per-pod requests, GPU and CPU counts, totals for PodGroups."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from trainer_controller.runtime.errors import BuildError

__all__ = [
    "add_requests",
    "cpu_count",
    "gpu_count",
    "has_gpu",
    "pod_requests",
    "quantity_value",
    "scale_requests",
]

_SUFFIXES: Final[Mapping[str, Decimal]] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY: Final = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")

# A quantity kept as (number, suffix) so that sums of "4Gi" stay "400Gi" rather than bytes.
Amount = tuple[Decimal, str]


def _split(value: Any) -> Amount:
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match or match.group(2) not in _SUFFIXES:
        raise BuildError(
            f"resource quantity {value!r} is not a Kubernetes quantity (e.g. 2, 500m, 4Gi)"
        )
    return Decimal(match.group(1)), match.group(2)


def quantity_value(value: Any) -> Decimal:
    """The numeric value of a quantity (``"500m"`` -> 0.5, ``"1Ki"`` -> 1024)."""
    number, suffix = _split(value)
    return number * _SUFFIXES[suffix]


def _value(amount: Amount) -> Decimal:
    return amount[0] * _SUFFIXES[amount[1]]


def _format(amount: Amount) -> str:
    number, suffix = amount
    if number == number.to_integral_value():
        return f"{int(number)}{suffix}"
    if suffix == "":
        milli = number * 1000
        if milli == milli.to_integral_value():
            return f"{int(milli)}m"
    return f"{number.normalize():f}{suffix}"


def _add(left: Amount, right: Amount) -> Amount:
    if left[1] == right[1]:
        return left[0] + right[0], left[1]
    return _value(left) + _value(right), ""


def gpu_count(resources: Mapping[str, Any] | None) -> int:
    """GPUs per node: the largest ``*gpu*`` limit, else request (0 when none)."""
    resources = resources or {}
    for kind in ("limits", "requests"):
        values = [
            quantity_value(v) for k, v in (resources.get(kind) or {}).items() if "gpu" in k.lower()
        ]
        if values:
            return int(max(values))
    return 0


def has_gpu(resources: Mapping[str, Any] | None) -> bool:
    """Whether any limit or request names a GPU resource."""
    resources = resources or {}
    return any(
        "gpu" in name.lower()
        for kind in ("limits", "requests")
        for name in (resources.get(kind) or {})
    )


def cpu_count(resources: Mapping[str, Any] | None) -> int | None:
    """CPUs per node rounded up: the CPU limit, else the request; None when neither is set."""
    resources = resources or {}
    for kind in ("limits", "requests"):
        cpu = (resources.get(kind) or {}).get("cpu")
        if cpu is not None:
            return max(1, math.ceil(quantity_value(cpu)))
    return None


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, str]:
    """What one pod requests: the sum over containers (a limit stands in for a missing request),
    at least the largest init container's, plus the pod overhead."""
    total: dict[str, Amount] = {}
    for container in pod_spec.get("containers") or ():
        for name, amount in _container_requests(container).items():
            total[name] = _add(total[name], amount) if name in total else amount
    for container in pod_spec.get("initContainers") or ():
        for name, amount in _container_requests(container).items():
            if name not in total or _value(amount) > _value(total[name]):
                total[name] = amount
    for name, value in (pod_spec.get("overhead") or {}).items():
        amount = _split(value)
        total[name] = _add(total[name], amount) if name in total else amount
    return {name: _format(amount) for name, amount in total.items()}


def _container_requests(container: Mapping[str, Any]) -> dict[str, Amount]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: _split(value) for name, value in merged.items()}


def scale_requests(requests: Mapping[str, str], count: int) -> dict[str, str]:
    """``requests`` times ``count``."""
    return {
        name: _format((_split(value)[0] * count, _split(value)[1]))
        for name, value in requests.items()
    }


def add_requests(totals: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The sum of several request maps (names in first-seen order)."""
    total: dict[str, Amount] = {}
    for requests in totals:
        for name, value in requests.items():
            amount = _split(value)
            total[name] = _add(total[name], amount) if name in total else amount
    return {name: _format(amount) for name, amount in total.items()}
