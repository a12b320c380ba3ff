"""Reading every source kind from paths and filesystem URIs, and refusing bad ones."""

from __future__ import annotations

import sys
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from trainer_data_cache import (
    InvalidArgumentError,
    SchemaMismatchError,
    SourceError,
    UnknownColumnError,
)
from trainer_data_cache.sources import read_table, resolve_source

TABLE = pa.table({"id": np.arange(10, dtype=np.int64), "score": np.arange(10, dtype=np.float64)})


def write_parquet_directory(root: Path) -> Path:
    (root / "dir" / "nested").mkdir(parents=True)
    pq.write_table(TABLE.slice(0, 4), root / "dir" / "a.parquet")
    pq.write_table(TABLE.slice(4, 3), root / "dir" / "b.parquet")
    pq.write_table(TABLE.slice(7), root / "dir" / "nested" / "c.parquet")
    (root / "dir" / "_SUCCESS").write_text("")
    return root / "dir"


def write_iceberg(root: Path) -> Path:
    pytest.importorskip("sqlalchemy", reason="pyiceberg's SQL catalog writes the test table")
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "test", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=(root / "warehouse").as_uri()
    )
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=TABLE.schema)
    table.append(TABLE.slice(0, 6))
    table.append(TABLE.slice(6))
    return root / "warehouse" / "ns" / "t"


WRITERS = {
    "parquet-file": lambda root: (pq.write_table(TABLE, root / "t.parquet"), root / "t.parquet")[1],
    "parquet-directory": write_parquet_directory,
    "ipc-file": lambda root: (feather.write_feather(TABLE, root / "t.arrow"), root / "t.arrow")[1],
    "csv-file": lambda root: (pcsv.write_csv(TABLE, root / "t.csv"), root / "t.csv")[1],
    "iceberg-table": write_iceberg,
}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_each_source_kind_reads_every_row_in_order(tmp_path: Path, kind: str) -> None:
    path = WRITERS[kind](tmp_path)
    table = read_table(resolve_source(str(path)))
    if kind == "iceberg-table":
        table = table.sort_by("id")
    assert table.column("id").to_pylist() == list(range(10))
    assert table.column("score").to_pylist() == [float(i) for i in range(10)]


def test_projection_and_filter_apply_at_load(tmp_path: Path) -> None:
    path = WRITERS["parquet-directory"](tmp_path)
    table = read_table(
        resolve_source(str(path)), ["score"], {"column": "id", "op": ">=", "value": 6}
    )
    assert table.schema.names == ["score"]
    assert table.column("score").to_pylist() == [6.0, 7.0, 8.0, 9.0]


def test_uris_use_pyarrow_or_fsspec_filesystems(tmp_path: Path) -> None:
    path = WRITERS["parquet-file"](tmp_path)
    assert read_table(resolve_source(path.as_uri())).num_rows == 10
    memory = fsspec.filesystem("memory")
    with memory.open("memory://data-cache-test/t.parquet", "wb") as handle:
        handle.write(path.read_bytes())
    assert read_table(resolve_source("memory://data-cache-test")).num_rows == 10


def test_an_iceberg_metadata_file_names_the_table(tmp_path: Path) -> None:
    table_dir = write_iceberg(tmp_path)
    (metadata,) = [p for p in sorted((table_dir / "metadata").glob("*.metadata.json"))[-1:]]
    assert read_table(resolve_source(str(metadata)), ["id"]).num_rows == 10


@pytest.mark.parametrize(
    ("setup", "error", "message"),
    [
        pytest.param(
            lambda root: str(root / "missing.parquet"),
            SourceError,
            "does not exist",
            id="missing-file",
        ),
        pytest.param(
            lambda root: (root / "x.txt").write_text("x") and str(root / "x.txt"),
            SourceError,
            "cannot tell the format",
            id="unknown-suffix",
        ),
        pytest.param(
            lambda root: (root / "empty").mkdir() or str(root / "empty"),
            SourceError,
            "no data files",
            id="empty-directory",
        ),
        pytest.param(
            lambda root: (root / "bad.parquet").write_text("nope") and str(root / "bad.parquet"),
            SourceError,
            "cannot read",
            id="corrupt-file",
        ),
        pytest.param(
            lambda root: "nosuchscheme://bucket/x",
            SourceError,
            "no filesystem",
            id="unknown-scheme",
        ),
    ],
)
def test_bad_sources_are_named(tmp_path: Path, setup, error: type[Exception], message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message):
        resolve_source(setup(tmp_path))


def test_files_with_different_schemas_are_refused(tmp_path: Path) -> None:
    pq.write_table(TABLE, tmp_path / "a.parquet")
    pq.write_table(TABLE.rename_columns(["id", "other"]), tmp_path / "b.parquet")
    with pytest.raises(SchemaMismatchError, match=r"b.parquet.*other: double.*a.parquet"):
        resolve_source(str(tmp_path))


def test_unknown_columns_and_formats_are_refused(tmp_path: Path) -> None:
    path = WRITERS["parquet-file"](tmp_path)
    with pytest.raises(UnknownColumnError, match=r"unknown column\(s\) \['nope'\]"):
        read_table(resolve_source(str(path)), ["id", "nope"])
    with pytest.raises(InvalidArgumentError, match="format: unknown format 'orc'"):
        resolve_source(str(path), format="orc")
    with pytest.raises(InvalidArgumentError, match="paths: expected at least one"):
        resolve_source([])


def test_an_iceberg_source_without_pyiceberg_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table_dir = write_iceberg(tmp_path)
    monkeypatch.setitem(sys.modules, "pyiceberg.table", None)  # as if not installed
    with pytest.raises(SourceError, match=r'pip install "trainer-data-cache\[iceberg\]"'):
        resolve_source(str(table_dir))
