"""Manifests as a YAML stream, multi-line strings as literal blocks (like kustomize build)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

__all__ = ["dump_stream"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_stream(manifests: Iterable[Mapping[str, Any]]) -> str:
    """One YAML document per manifest, keys in their given order."""
    return yaml.dump_all(
        [dict(m) for m in manifests],
        Dumper=_Dumper,
        sort_keys=False,
        explicit_start=True,
        width=100,
    )
