"""Wire documents: round trips, versions, and fields checked by name."""

from __future__ import annotations

import itertools
import json

import pytest
from trainer_data_cache import InvalidArgumentError
from trainer_data_cache.partitions import RowRange, shard_range, split_rows
from trainer_data_cache.tickets import MAX_INT, PutRequest, ReadRequest, Ticket


def test_documents_round_trip() -> None:
    ticket = Ticket("d", 3, 1, 10, 12, 20, 0, 4, ["x"], {"column": "x", "op": "==", "value": 1})
    assert Ticket.from_bytes(ticket.to_bytes()) == ticket
    assert ticket.resumed(15).start == 15 and ticket.resumed(15).phase == 0
    request = ReadRequest("d", 1, 2, None, "x > 1", 8)
    assert ReadRequest.from_bytes(request.to_bytes()) == request
    assert PutRequest.from_bytes(PutRequest("d", 1, 0, 5).to_bytes()).nbytes == 5
    assert PutRequest.from_bytes(PutRequest("d", 1, 0, 5, rows=7).to_bytes()).rows == 7


def test_a_put_request_refuses_a_negative_row_count() -> None:
    with pytest.raises(InvalidArgumentError, match="rows: expected an integer >= 0, got -1"):
        PutRequest("d", 1, 0, 5, rows=-1)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(b"not json", "not a JSON document", id="not-json"),
        pytest.param(
            json.dumps({"v": 99, "dataset": "d"}).encode(),
            r"ReadRequest.v: expected version 1",
            id="version",
        ),
        pytest.param(
            json.dumps({"v": 1, "dataset": "d", "shard": 2, "num_shards": 2}).encode(),
            "shard",
            id="shard",
        ),
        pytest.param(json.dumps({"v": 1, "dataset": ""}).encode(), "dataset", id="empty-name"),
        pytest.param(
            json.dumps({"v": 1, "dataset": "d", "batch_rows": 0}).encode(),
            "batch_rows",
            id="batch-rows",
        ),
        pytest.param(
            json.dumps({"v": 1, "dataset": "d", "columns": "x"}).encode(), "columns", id="columns"
        ),
        pytest.param(
            json.dumps({"v": 1, "dataset": "d", "num_shards": 2**63}).encode(),
            r"num_shards: expected an integer <= 9223372036854775807 \(int64\), got a 64-bit one",
            id="num-shards-over-int64",
        ),
        pytest.param(
            b'{"v": 1, "dataset": "d", "num_shards": 1' + b"0" * 5000 + b"}",
            "not a JSON document",
            id="num-shards-of-5000-digits",
        ),
        pytest.param(
            json.dumps({"v": 1, "dataset": "d", "surprise": 1}).encode(),
            "surprise",
            id="unknown-field",
        ),
    ],
)
def test_bad_read_requests_are_named(document: bytes, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        ReadRequest.from_bytes(document)


def test_a_ticket_range_must_lie_after_its_base() -> None:
    with pytest.raises(InvalidArgumentError, match="start: expected an integer >= 10"):
        Ticket("d", 1, 0, 10, 5, 20, 0, 4)


@pytest.mark.parametrize(
    ("total", "parts", "sizes"), [(10, 3, [4, 3, 3]), (2, 3, [1, 1, 0]), (0, 2, [0, 0])]
)
def test_split_rows_balances_contiguous_ranges(total: int, parts: int, sizes: list[int]) -> None:
    ranges = split_rows(total, parts)
    assert [len(part) for part in ranges] == sizes
    assert ranges[0].start == 0 and ranges[-1].stop == total
    assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))
    with pytest.raises(InvalidArgumentError, match="parts"):
        split_rows(total, 0)
    with pytest.raises(InvalidArgumentError, match="row range"):
        RowRange(3, 2)


@pytest.mark.parametrize(("total", "parts"), [(10, 3), (2, 3), (0, 2), (1000, 7), (7, 1000)])
def test_shard_range_is_the_range_split_rows_gives(total: int, parts: int) -> None:
    assert [shard_range(total, parts, index) for index in range(parts)] == split_rows(total, parts)


@pytest.mark.parametrize(
    ("total", "parts", "index", "expected"),
    [
        pytest.param(10**6, MAX_INT, MAX_INT - 1, RowRange(10**6, 10**6), id="last-of-int64-many"),
        pytest.param(10**6, 10**12, 999_999, RowRange(999_999, 10**6), id="last-row-of-10**12"),
        pytest.param(MAX_INT, 3, 2, RowRange(2 * (MAX_INT // 3) + 1, MAX_INT), id="int64-rows"),
    ],
)
def test_shard_range_of_huge_counts_is_computed_alone(
    total: int, parts: int, index: int, expected: RowRange
) -> None:
    assert shard_range(total, parts, index) == expected


def test_shard_range_refuses_an_index_outside_the_parts() -> None:
    with pytest.raises(InvalidArgumentError, match="index: expected 0 <= index < parts=3, got 3"):
        shard_range(10, 3, 3)
