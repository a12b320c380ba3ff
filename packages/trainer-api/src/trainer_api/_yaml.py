"""YAML loading as Kubernetes does it: timestamps stay strings."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_documents"]


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver, so times round-trip as written."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(text: str) -> list[Any]:
    """Every non-empty document of a YAML stream."""
    return [document for document in yaml.load_all(text, Loader=_Loader) if document is not None]
