"""Structured filters and DataFusion expression text, applied and refused."""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pytest
from trainer_data_cache import InvalidFilterError
from trainer_data_cache.filters import apply_filter, check_filter_shape

TABLE = pa.table({"n": [1, 2, 3, 4, None], "word": ["a", "b", "c", "d", "e"]})


def kept(spec: object) -> list[object]:
    frame = datafusion.SessionContext().from_arrow(TABLE)
    return apply_filter(frame, spec).to_pydict()["word"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        pytest.param(None, ["a", "b", "c", "d", "e"], id="none"),
        pytest.param({"column": "n", "op": ">=", "value": 3}, ["c", "d"], id="compare"),
        pytest.param({"column": "word", "op": "in", "value": ["b", "d"]}, ["b", "d"], id="in"),
        pytest.param(
            {"column": "word", "op": "not_in", "value": ["b"]}, ["a", "c", "d", "e"], id="not-in"
        ),
        pytest.param({"column": "n", "op": "is_null"}, ["e"], id="is-null"),
        pytest.param(
            {
                "or": [
                    {"column": "n", "op": "==", "value": 1},
                    {"column": "word", "op": "==", "value": "d"},
                ]
            },
            ["a", "d"],
            id="or",
        ),
        pytest.param(
            {
                "and": [
                    {"column": "n", "op": ">", "value": 1},
                    {"not": {"column": "n", "op": "==", "value": 3}},
                ]
            },
            ["b", "d"],
            id="and-not",
        ),
        pytest.param("n % 2 = 0 OR word = 'a'", ["a", "b", "d"], id="text"),
        pytest.param("word = 'a; DROP TABLE t'", [], id="text-is-an-expression-not-sql"),
    ],
)
def test_filters_keep_the_expected_rows(spec: object, words: list[str]) -> None:
    assert kept(spec) == words


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"column": "nope", "op": "==", "value": 1},
            r"filter.column: unknown column 'nope'",
            id="unknown-column",
        ),
        pytest.param(
            {"column": "n", "op": "~", "value": 1},
            r"filter.op: unknown operator '~'",
            id="unknown-op",
        ),
        pytest.param(
            {"column": "n", "op": "=="}, r"filter.value: '==' needs a value", id="missing-value"
        ),
        pytest.param(
            {"column": "n", "op": "is_null", "value": 1}, r"takes no value", id="value-on-null-test"
        ),
        pytest.param({"column": "n", "op": "in", "value": []}, r"non-empty list", id="empty-in"),
        pytest.param(
            {"column": "n", "op": "==", "value": [1]},
            r"filter.value: expected a number",
            id="list-for-scalar",
        ),
        pytest.param({"and": []}, r"filter.and: expected a non-empty list", id="empty-and"),
        pytest.param(
            {"and": [{"column": "n"}]}, r"filter.and\[0\]: expected keys", id="nested-path"
        ),
        pytest.param(
            {"column": "n", "op": "==", "value": 1, "x": 2},
            r"unexpected keys \['x'\]",
            id="extra-key",
        ),
        pytest.param(42, r"filter: expected a mapping or expression text", id="not-a-filter"),
        pytest.param("n >", r"not a DataFusion expression", id="malformed-text"),
        pytest.param("n; DROP TABLE t", r"not a DataFusion expression", id="statement-text"),
        pytest.param("nope = 1", r"nope", id="text-unknown-column"),
        pytest.param("n + 1", r"boolean", id="text-not-boolean"),
        pytest.param("n IN (SELECT 1)", r"subqueries are not allowed", id="text-subquery"),
        pytest.param("  ", r"empty", id="blank-text"),
    ],
)
def test_bad_filters_are_refused_with_the_field_path(spec: object, message: str) -> None:
    with pytest.raises(InvalidFilterError, match=message):
        kept(spec)


def test_shape_check_needs_no_schema() -> None:
    check_filter_shape({"column": "anything", "op": "==", "value": 1})
    with pytest.raises(InvalidFilterError, match=r"filter\.op"):
        check_filter_shape({"column": "anything", "op": "??", "value": 1})
