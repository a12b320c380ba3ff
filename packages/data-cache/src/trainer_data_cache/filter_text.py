"""Filter expression text, held to an allow-list before DataFusion sees it.

The text is parsed with sqlglot (a well-kept SQL parser, so no hand-written grammar here) and
every node of the tree must be one a row filter needs: columns, literals, arithmetic,
comparison, boolean logic, ``IN`` with a list, ``BETWEEN``, ``IS [NOT] NULL``, ``[I]LIKE`` and
the functions in ``FUNCTIONS``. Anything else (``repeat``, casts, ``CASE``, aggregates,
subqueries, a second statement, a table-qualified column) is refused by name. Only the
canonical rendering of the checked tree is handed to DataFusion, so it never parses text that
was not checked. Every allowed function's output is at most a small multiple of its input,
which is what keeps a filter's memory proportional to the batch it runs over.
"""

from __future__ import annotations

from typing import Final

import sqlglot
from sqlglot import exp

from trainer_data_cache.errors import InvalidFilterError

__all__ = ["FUNCTIONS", "MAX_NODES", "MAX_TEXT", "checked_text"]

MAX_TEXT: Final = 4096
"""Characters a filter's text may have."""

MAX_NODES: Final = 512
"""Nodes its expression tree may have."""

_DIALECT: Final = "postgres"
"""Read and written in the dialect closest to DataFusion's SQL."""

FUNCTIONS: Final[dict[type[exp.Expr], str]] = {
    exp.Abs: "abs",
    exp.Ceil: "ceil",
    exp.Floor: "floor",
    exp.Round: "round",
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.Length: "length",
    exp.Coalesce: "coalesce",
}
"""The functions a filter may call (sqlglot node: the name users write)."""

_OPERATORS: Final[tuple[type[exp.Expr], ...]] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.Paren,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.Neg,
)
_VALUES: Final[tuple[type[exp.Expr], ...]] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Boolean,
    exp.Null,
)
_ALLOWED: Final = frozenset((*_OPERATORS, *_VALUES, *FUNCTIONS))
"""Exact node types: a subclass of an allowed node is not allowed by inheritance."""


def checked_text(text: str) -> str:
    """``text`` as the canonical rendering of its allow-listed expression tree; raises
    InvalidFilterError naming what is not allowed (or why it does not parse)."""
    if not text.strip():
        raise InvalidFilterError("filter: expression text is empty")
    if len(text) > MAX_TEXT:
        raise InvalidFilterError(
            f"filter: expression text has {len(text)} characters; at most {MAX_TEXT} allowed"
        )
    try:
        tree = sqlglot.parse_one(text, read=_DIALECT)
    except (sqlglot.errors.SqlglotError, RecursionError) as error:
        first = (str(error).splitlines() or [""])[0]
        raise InvalidFilterError(
            f"filter: {_shown(text)} is not a filter expression: {first}"
        ) from None
    if isinstance(tree, exp.Block):
        raise InvalidFilterError(
            f"filter: {_shown(text)} is not a filter expression: it holds several statements"
        )
    for count, node in enumerate(tree.walk(), 1):
        if count > MAX_NODES:
            raise InvalidFilterError(f"filter: more than {MAX_NODES} terms; simplify it")
        _check(node)
    return tree.sql(dialect=_DIALECT)


def _check(node: exp.Expr) -> None:
    if isinstance(node, (exp.Subquery, exp.Query)) or (
        isinstance(node, exp.In) and (node.args.get("query") or node.args.get("unnest"))
    ):
        raise InvalidFilterError("filter: subqueries are not allowed; use one row expression")
    if type(node) not in _ALLOWED:
        raise InvalidFilterError(
            f"filter: {_name(node)} is not allowed; a filter may use columns, literals, "
            "arithmetic, comparisons, AND/OR/NOT, IN (...), BETWEEN, IS [NOT] NULL, [I]LIKE and "
            f"the functions {sorted(FUNCTIONS.values())}"
        )
    if isinstance(node, exp.Column) and node.table:
        raise InvalidFilterError(
            f"filter: column {node.sql(dialect=_DIALECT)!r} names a table; name the column only"
        )


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {node.name.lower()!r}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()!r}"
    return f"{node.key.upper()} ({_shown(node.sql(dialect=_DIALECT))})"


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")
