"""Every answer of ``trainer ui`` as strict JSON (RFC 8259): a browser's ``JSON.parse`` refuses
``NaN`` and ``Infinity``, which Python's ``json`` writes by default.

A non-finite number (a diverged loss) becomes ``null``, and a flag beside it says what it was:
``{"best": NaN}`` is sent as ``{"best": null, "bestNonFinite": "NaN"}``, and a list
``{"y": [1.0, NaN]}`` as ``{"y": [1.0, null], "yNonFinite": {"1": "NaN"}}``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

__all__ = ["NON_FINITE_SUFFIX", "dumps"]

NON_FINITE_SUFFIX: Final = "NonFinite"


def _name(value: float) -> str:
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def _non_finite(value: object) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _clean(value: Any) -> Any:
    """``value`` with non-finite numbers as None and their flags added."""
    if isinstance(value, dict):
        cleaned: dict[Any, Any] = {}
        for key, item in value.items():
            if _non_finite(item):
                cleaned[key] = None
                cleaned[f"{key}{NON_FINITE_SUFFIX}"] = _name(item)
                continue
            cleaned[key] = _clean(item)
            if isinstance(item, list | tuple) and (
                flags := {str(i): _name(x) for i, x in enumerate(item) if _non_finite(x)}
            ):
                cleaned[f"{key}{NON_FINITE_SUFFIX}"] = flags
        return cleaned
    if isinstance(value, list | tuple):
        return [None if _non_finite(item) else _clean(item) for item in value]
    return value


def dumps(document: Any) -> str:
    """``document`` as strict JSON (ValueError if anything non-finite were left)."""
    return json.dumps(_clean(document), allow_nan=False)
