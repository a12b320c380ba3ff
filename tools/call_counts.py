"""Counting the calls of functions while a test runs: how the tests of issue 34 measure that a
job is parsed, defaulted, validated and admitted once (``count_calls``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

__all__ = ["count_calls"]


def count_calls(monkeypatch: pytest.MonkeyPatch, *targets: tuple[Any, str]) -> Counter[str]:
    """A Counter that counts, by name, each call of ``module.name`` for every (module, name) of
    ``targets`` from now until the test ends (the functions are wrapped where they are looked
    up: the module attribute)."""
    calls: Counter[str] = Counter()
    for module, name in targets:
        function = getattr(module, name)

        def counted(*args: Any, _name: str = name, _function: Any = function, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _function(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return calls
