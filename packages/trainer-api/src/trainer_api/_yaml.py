"""YAML loading as the Kubernetes API server reads it, hardened against hostile documents.

Timestamps stay strings. Before any Python object is built, a document is refused when it
nests deeper than ``MAX_DEPTH``, when an anchor contains an alias to itself, or when alias
expansion makes up too much of it: the rule of go-yaml (which the API server's YAML reader
uses), where more than 100 aliased nodes in a document of more than 1000 decoded nodes may
make up at most 99% of it up to 400,000 nodes, scaling down to 10% at 4,000,000. Duplicate
keys in a mapping are refused, as strict Kubernetes decoding does (merge keys ``<<`` may
still be overridden).
"""

from __future__ import annotations

from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_DEPTH", "YamlLimitError", "load_documents", "nesting_depth"]

MAX_DEPTH: Final = 100
"""Deepest nesting of mappings and lists accepted (the deepest API field is about 25 levels)."""

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_RATIO_LOW: Final = 400_000
_RATIO_HIGH: Final = 4_000_000


class YamlLimitError(yaml.YAMLError):
    """A document exceeds a limit (depth, aliasing) or repeats a mapping key."""


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
            raise YamlLimitError(f"an anchor contains an alias to itself{node.start_mark}")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    decoded = expanded[id(root)]
    aliased = decoded - len(expanded)  # every node decoded beyond its one written occurrence
    if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
        raise YamlLimitError(
            f"document contains excessive aliasing: {decoded} nodes once expanded, "
            f"{aliased} of them from aliases{root.start_mark}"
        )


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver, with depth, alias and duplicate-key limits."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise YamlLimitError(f"nesting deeper than {MAX_DEPTH} levels{mark}")
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
                    raise YamlLimitError(
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

    Raises ``yaml.YAMLError`` (``YamlLimitError`` for the limits) or ``UnicodeDecodeError``.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return [document for document in yaml.load_all(text, Loader=_Loader) if document is not None]


def nesting_depth(value: object, limit: int = MAX_DEPTH) -> int:
    """How deep dicts and lists nest in ``value`` (a scalar: 0); more than ``limit`` means
    deeper than ``limit``, measured no further. Linear in distinct objects, any depth, cycles."""
    heights: dict[int, int] = {}
    stack: list[tuple[object, int, bool]] = [(value, 0, False)]
    while stack:
        item, depth, done = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        children = list(item.values()) if isinstance(item, dict) else item
        if done:
            heights[id(item)] = 1 + max(
                (heights.get(id(child), 0) for child in children), default=0
            )
        elif id(item) in heights:
            if depth + heights[id(item)] > limit:
                return limit + 1
        elif depth >= limit:
            return limit + 1
        else:
            stack.append((item, depth, True))
            stack.extend((child, depth + 1, False) for child in children)
    return heights.get(id(value), 0)
