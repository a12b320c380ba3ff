"""YAML as the Kubernetes API server reads it, hardened against hostile documents, and the one
way manifests are written as YAML.

Timestamps stay strings. Before any Python object is built, a document is refused when it
nests deeper than ``MAX_DEPTH``, when an anchor contains an alias to itself, or when alias
expansion makes up too much of it: the rule of go-yaml (which the API server's YAML reader
uses), where more than 100 aliased nodes in a document of more than 1000 decoded nodes may
make up at most 99% of it up to 400,000 nodes, scaling down to 10% at 4,000,000. Duplicate
keys in a mapping are refused, as strict Kubernetes decoding does (merge keys ``<<`` may
still be overridden). ``check_value`` applies the depth and expansion limits to values already
decoded (dicts and lists that share objects expand like aliases when walked).

``dump_yaml`` and ``dump_yaml_stream`` write what every package writes (CRDs, rendered
manifests, runtime snapshots): block style, lines up to 100 columns, multi-line strings as
literal ``|`` blocks, repeated values written out in full instead of as anchors, and keys in
their given order unless sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_DEPTH",
    "LimitError",
    "check_value",
    "dump_yaml",
    "dump_yaml_stream",
    "load_documents",
]

MAX_DEPTH: Final = 100
"""Deepest nesting of mappings and lists accepted (the deepest API field is about 25 levels)."""

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_RATIO_LOW: Final = 400_000
_RATIO_HIGH: Final = 4_000_000


class LimitError(yaml.YAMLError):
    """A document or value exceeds a limit (depth, aliasing) or repeats a mapping key."""


def _allowed_alias_ratio(decoded: int) -> float:
    """The share of decoded nodes alias expansion may produce (go-yaml's ``allowedAliasRatio``)."""
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_aliasing(root: Node) -> None:
    """Refuse excessive or recursive aliasing, counting without expanding anything."""
    expanded: dict[int, int] = {}  # node id -> nodes it decodes to, aliases expanded
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise LimitError(f"an anchor contains an alias to itself{node.start_mark}")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    _check_expansion(expanded[id(root)], len(expanded), str(root.start_mark))


def _check_expansion(decoded: int, written: int, where: str) -> None:
    """go-yaml's rule on ``decoded`` nodes of which ``written`` are distinct."""
    aliased = decoded - written  # every node decoded beyond its one written occurrence
    if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
        raise LimitError(
            f"document contains excessive aliasing: {decoded} nodes once expanded, "
            f"{aliased} of them from aliases{where}"
        )


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver, with depth, alias and duplicate-key limits."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise LimitError(f"nesting deeper than {MAX_DEPTH} levels{mark}")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Node | None:
        node = super().compose_document()
        if node is not None:
            _check_aliasing(node)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):  # also called for the pairs of !!omap and the like
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise LimitError(
                        f"duplicate key {key_node.value!r} in a mapping{key_node.start_mark}"
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(text: str | bytes) -> list[Any]:
    """Every non-empty document of a YAML stream; bytes must be UTF-8.

    Raises ``yaml.YAMLError`` (``LimitError`` for the limits) or ``UnicodeDecodeError``.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return [document for document in yaml.load_all(text, Loader=_Loader) if document is not None]


def check_value(value: object) -> None:
    """Refuse a decoded value nested deeper than ``MAX_DEPTH`` or sharing dicts and lists so
    much that walking it expands as excessive aliasing would (counting dicts and lists).

    Linear in distinct objects; a cycle is refused as too deep. Raises ``LimitError``.
    """
    heights: dict[int, int] = {}
    sizes: dict[int, int] = {}
    stack: list[tuple[object, int, bool]] = [(value, 0, False)]
    while stack:
        item, depth, done = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        children = [
            child
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if done:
            heights[id(item)] = 1 + max((heights[id(child)] for child in children), default=0)
            sizes[id(item)] = 1 + sum(sizes[id(child)] for child in children)
        elif id(item) in heights:
            if depth + heights[id(item)] > MAX_DEPTH:
                raise LimitError(f"nested deeper than {MAX_DEPTH} levels")
        elif depth >= MAX_DEPTH:
            raise LimitError(f"nested deeper than {MAX_DEPTH} levels")
        else:
            stack.append((item, depth, True))
            stack.extend((child, depth + 1, False) for child in children)
    if id(value) in sizes:
        _check_expansion(sizes[id(value)], len(sizes), "")


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe dumper writing multi-line strings as literal blocks and never an alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(document: Mapping[str, Any], sort_keys: bool = False) -> str:
    """One YAML document."""
    return str(
        yaml.dump(
            dict(document), Dumper=_Dumper, sort_keys=sort_keys, width=100, allow_unicode=True
        )
    )


def dump_yaml_stream(documents: Iterable[Mapping[str, Any]]) -> str:
    """A YAML stream: each document after a ``---`` line, keys in their given order."""
    return "".join(f"---\n{dump_yaml(document)}" for document in documents)
