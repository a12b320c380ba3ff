"""Label and field selectors as the API server parses them from query strings."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["InvalidSelectorError", "parse_field_selector", "parse_label_selector"]

Matcher = Callable[[Mapping[str, Any]], bool]

_SET_TERM = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY_TERM = re.compile(r"^\s*([\w./-]+)\s*(==|!=|=)\s*([\w./-]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


class InvalidSelectorError(ValueError):
    """A selector string that does not parse."""


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside a parenthesised value set."""
    terms, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def _label_term(term: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_TERM.match(term):
        key, operator, raw = match.groups()
        values = {value.strip() for value in raw.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY_TERM.match(term):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_TERM.match(term):
        negated, key = match.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise InvalidSelectorError(f"labelSelector: cannot parse term {term!r}")


def parse_label_selector(selector: str | None) -> Matcher:
    """A predicate over objects for a labelSelector such as ``app=x,tier in (a,b),!legacy``."""
    terms = [_label_term(term) for term in _split_terms(selector or "")]

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(term(labels) for term in terms)

    return matches


def _field_value(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def parse_field_selector(selector: str | None) -> Matcher:
    """A predicate for a fieldSelector of ``path=value`` / ``path!=value`` terms."""
    terms: list[tuple[str, str, str]] = []
    for term in _split_terms(selector or ""):
        match = _EQUALITY_TERM.match(term)
        if not match:
            raise InvalidSelectorError(f"fieldSelector: cannot parse term {term!r}")
        terms.append(match.groups())  # type: ignore[arg-type]

    def matches(obj: Mapping[str, Any]) -> bool:
        return all(
            (_field_value(obj, path) == value) != (operator == "!=")
            for path, operator, value in terms
        )

    return matches
