"""Row filters: a structured expression or DataFusion expression text, checked against a schema.

A structured filter is JSON-shaped, so it crosses the wire unchanged:

```
{"column": "label", "op": ">=", "value": 3}
{"column": "split", "op": "in", "value": ["train", "val"]}
{"column": "weight", "op": "is_not_null"}
{"and": [f1, f2, ...]}   {"or": [f1, f2, ...]}   {"not": f}
```

Text such as ``"label >= 3 AND split = 'train'"`` is first held to the allow-list of
``trainer_data_cache.filter_text`` (columns, literals, comparison, boolean logic, IN, LIKE, a few
functions), then its checked rendering is parsed by DataFusion as one expression over the
data's schema. Either way the result is a DataFusion ``Expr`` applied with
``DataFrame.filter``; no filter is ever pasted into a SQL statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import datafusion
from datafusion import col, functions, lit

from trainer_data_cache.errors import InvalidFilterError
from trainer_data_cache.filter_text import checked_text

__all__ = ["Filter", "apply_filter", "check_filter_shape"]

Filter: TypeAlias = "Mapping[str, Any] | str | None"
"""A structured filter, DataFusion expression text, or None for every row."""

_Scalar: TypeAlias = "bool | int | float | str"

_COMPARISONS: Final[dict[str, Callable[[datafusion.Expr, datafusion.Expr], datafusion.Expr]]] = {
    "==": lambda left, right: left == right,
    "!=": lambda left, right: left != right,
    "<": lambda left, right: left < right,
    "<=": lambda left, right: left <= right,
    ">": lambda left, right: left > right,
    ">=": lambda left, right: left >= right,
}
_LIST_OPS: Final = ("in", "not_in")
_NULL_OPS: Final = ("is_null", "is_not_null")
_OPS: Final = (*_COMPARISONS, *_LIST_OPS, *_NULL_OPS)


def apply_filter(frame: datafusion.DataFrame, spec: Filter) -> datafusion.DataFrame:
    """``frame`` cut to the rows ``spec`` keeps; raises InvalidFilterError naming the fault."""
    if spec is None:
        return frame
    columns = set(frame.schema().names)
    expr = _parse_text(frame, spec) if isinstance(spec, str) else _build(spec, columns, "filter")
    try:
        filtered = frame.filter(expr)
        plan = filtered.logical_plan().display_indent()
    except Exception as error:  # DataFusion raises plain Exception for planning errors
        raise InvalidFilterError(f"filter: {_datafusion_message(error)}") from error
    if "Subquery" in plan or plan.count("TableScan") != 1:
        raise InvalidFilterError("filter: subqueries are not allowed; use one row expression")
    return filtered


def check_filter_shape(spec: object) -> None:
    """Check that ``spec`` is a filter in form (no schema needed); raises InvalidFilterError."""
    if isinstance(spec, str):
        checked_text(spec)
    elif spec is not None:
        _build(spec, None, "filter")


def _parse_text(frame: datafusion.DataFrame, text: str) -> datafusion.Expr:
    checked = checked_text(text)
    try:
        return frame.parse_sql_expr(checked)
    except Exception as error:  # DataFusion raises plain Exception for parse errors
        raise InvalidFilterError(
            f"filter: {text!r} is not a DataFusion expression: {_datafusion_message(error)}"
        ) from error


def _build(spec: object, columns: set[str] | None, path: str) -> datafusion.Expr:
    if not isinstance(spec, Mapping):
        raise InvalidFilterError(
            f"{path}: expected a mapping or expression text, got {type(spec).__name__}"
        )
    keys = set(spec)
    if keys in ({"and"}, {"or"}):
        (key,) = keys
        return _combine(key, spec[key], columns, f"{path}.{key}")
    if keys == {"not"}:
        return ~_build(spec["not"], columns, f"{path}.not")
    if "column" not in spec or "op" not in spec:
        raise InvalidFilterError(
            f"{path}: expected keys 'column' and 'op' (and 'value'), or one of 'and', 'or', 'not'; "
            f"got {sorted(keys)}"
        )
    return _compare(spec, columns, path)


def _combine(key: str, parts: object, columns: set[str] | None, path: str) -> datafusion.Expr:
    if not isinstance(parts, Sequence) or isinstance(parts, str) or not parts:
        raise InvalidFilterError(f"{path}: expected a non-empty list of filters")
    exprs = [_build(part, columns, f"{path}[{index}]") for index, part in enumerate(parts)]
    result = exprs[0]
    for expr in exprs[1:]:
        result = (result & expr) if key == "and" else (result | expr)
    return result


def _compare(spec: Mapping[str, Any], columns: set[str] | None, path: str) -> datafusion.Expr:
    name, op = spec["column"], spec["op"]
    extra = set(spec) - {"column", "op", "value"}
    if extra:
        raise InvalidFilterError(f"{path}: unexpected keys {sorted(extra)}")
    if not isinstance(name, str):
        raise InvalidFilterError(f"{path}.column: expected a column name, got {name!r}")
    if columns is not None and name not in columns:
        raise InvalidFilterError(
            f"{path}.column: unknown column {name!r}; the data has {sorted(columns)}"
        )
    if op not in _OPS:
        raise InvalidFilterError(
            f"{path}.op: unknown operator {op!r}; expected one of {list(_OPS)}"
        )
    column = col(name)
    if op in _NULL_OPS:
        if "value" in spec:
            raise InvalidFilterError(f"{path}.value: {op!r} takes no value")
        return column.is_null() if op == "is_null" else column.is_not_null()
    if "value" not in spec:
        raise InvalidFilterError(f"{path}.value: {op!r} needs a value")
    value = spec["value"]
    if op in _LIST_OPS:
        if not isinstance(value, Sequence) or isinstance(value, str) or not value:
            raise InvalidFilterError(f"{path}.value: {op!r} needs a non-empty list of scalars")
        items = [lit(_scalar(item, f"{path}.value[{index}]")) for index, item in enumerate(value)]
        return functions.in_list(column, items, negated=op == "not_in")
    return _COMPARISONS[op](column, lit(_scalar(value, f"{path}.value")))


def _scalar(value: object, path: str) -> _Scalar:
    if isinstance(value, (bool, int, float, str)):
        return value
    raise InvalidFilterError(f"{path}: expected a number, string or boolean, got {value!r}")


def _datafusion_message(error: Exception) -> str:
    return str(error).replace("DataFusion error: ", "").strip()
