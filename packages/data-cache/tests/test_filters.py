"""Structured filters and DataFusion expression text, applied and refused."""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pytest
from trainer_data_cache import InvalidFilterError, MemoryBudgetExceededError, query
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
        pytest.param("n >", r"not a filter expression", id="malformed-text"),
        pytest.param("n; DROP TABLE t", r"not a filter expression", id="statement-text"),
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


WIDE = pa.table(
    {
        "n": [1, 2, 3, 4, None],
        "word": ["apple", "Banana", "cherry", "date", "elder"],
        "weight": [0.5, -1.5, 2.5, None, 4.0],
    }
)


def kept_wide(text: str) -> list[object]:
    frame = datafusion.SessionContext().from_arrow(WIDE)
    return apply_filter(frame, text).to_pydict()["word"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param("word LIKE '%an%'", ["Banana"], id="like"),
        pytest.param("word ILIKE 'b%'", ["Banana"], id="ilike"),
        pytest.param("word NOT LIKE '%e%'", ["Banana"], id="not-like"),
        pytest.param("n BETWEEN 2 AND 3", ["Banana", "cherry"], id="between"),
        pytest.param("weight IS NOT NULL AND n IS NULL", ["elder"], id="is-null"),
        pytest.param("n NOT IN (1, 2)", ["cherry", "date"], id="not-in"),
        pytest.param("abs(weight) > 1 AND -n < -2", ["cherry"], id="abs-neg"),
        pytest.param(
            "lower(word) = 'banana' OR upper(word) = 'DATE'", ["Banana", "date"], id="case"
        ),
        pytest.param("length(word) = 4", ["date"], id="length"),
        pytest.param("coalesce(n, 0) = 0", ["elder"], id="coalesce"),
        pytest.param(
            "floor(weight) = 0 OR ceil(weight) = -1 OR round(weight) = 4",
            ["apple", "Banana", "elder"],
            id="rounding",
        ),
        pytest.param("(n * 3 + 1) / 2 >= 5 AND TRUE", ["cherry", "date"], id="arithmetic"),
    ],
)
def test_the_allowed_filter_language_keeps_the_expected_rows(text: str, words: list[str]) -> None:
    assert kept_wide(text) == words


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The attack of issue 25: one filter made the cache allocate 57.9 GB and abort.
        pytest.param(
            "length(repeat(word, 100000)) > 0", r"function 'repeat' is not allowed", id="repeat"
        ),
        pytest.param(
            "lpad(word, 1000000000) = 'x'", r"function '\w*pad' is not allowed", id="lpad"
        ),
        pytest.param("concat(word, word) = 'x'", r"is not allowed", id="concat"),
        pytest.param("word || word = 'x'", r"DPIPE .* is not allowed", id="string-concat"),
        pytest.param("array_length(make_array(n, n)) > 0", r"is not allowed", id="arrays"),
        pytest.param("CAST(n AS VARCHAR) = '1'", r"function 'cast' is not allowed", id="cast"),
        pytest.param("CASE WHEN n > 1 THEN 1 ELSE 0 END = 1", r"'case' is not allowed", id="case"),
        pytest.param("sum(n) > 1", r"function 'sum' is not allowed", id="aggregate"),
        pytest.param("regexp_like(word, '(a+)+$')", r"is not allowed", id="regex"),
        pytest.param("my_udf(n) > 1", r"function 'my_udf' is not allowed", id="unknown-function"),
        pytest.param("t.n > 1", r"column 't.n' names a table", id="qualified-column"),
        pytest.param("n = $1", r"PARAMETER .* is not allowed", id="parameter"),
        pytest.param("EXISTS (SELECT 1)", r"'exists' is not allowed", id="exists"),
        pytest.param("DROP TABLE t", r"is not allowed", id="statement"),
        pytest.param("n > 1 " + "OR n > 1 " * 600, r"characters; at most 4096", id="long-text"),
        pytest.param(
            " OR ".join(["n IN (1, 2, 3)"] * 100), r"more than 512 terms", id="many-terms"
        ),
        pytest.param("(" * 2000 + "n" + ")" * 2000 + " > 1", r"not a filter expression", id="deep"),
    ],
)
def test_text_outside_the_allow_list_is_refused_before_datafusion(text: str, message: str) -> None:
    with pytest.raises(InvalidFilterError, match=message):
        check_filter_shape(text)  # no schema: the check needs none
    with pytest.raises(InvalidFilterError, match=message):
        kept_wide(text)


def test_a_query_that_outgrows_its_memory_pool_fails_with_the_budget_error() -> None:
    table = pa.table({"n": list(range(100_000))})
    frame = query.plan(table, None, None, memory=1024)
    greedy = frame.sort(datafusion.col("n").sort(ascending=False)).limit(3)
    with pytest.raises(MemoryBudgetExceededError, match="outgrew its memory pool"):
        list(query.stream_batches(greedy))
    roomy = query.plan(table, None, None, memory=64 << 20)
    top = roomy.sort(datafusion.col("n").sort(ascending=False)).limit(3)
    assert [batch.column(0).to_pylist() for batch in query.stream_batches(top)] == [
        [99_999, 99_998, 99_997]
    ]
