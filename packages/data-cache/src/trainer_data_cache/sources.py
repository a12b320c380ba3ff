"""Reading a source (Parquet, Arrow IPC/Feather, CSV, Iceberg) from a path or filesystem URI.

Paths may be local or any URI that pyarrow's filesystems or fsspec understand. A directory is
read as every data file under it in sorted path order, so row order is stable between loads.
An Iceberg table is named by its table directory (holding ``metadata/``) or a
``*.metadata.json`` file and read through pyiceberg without a catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

import fsspec
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from trainer_data_cache import query
from trainer_data_cache.errors import InvalidArgumentError, SchemaMismatchError, SourceError
from trainer_data_cache.filters import Filter

__all__ = ["FORMATS", "ResolvedSource", "read_table", "resolve_source"]

FORMATS: Final[dict[str, str]] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
    ".csv": "csv",
}
"""File suffix to format; ``iceberg`` is recognised by its metadata instead."""

_METADATA_SUFFIX: Final = ".metadata.json"


@dataclass(frozen=True)
class ResolvedSource:
    """The files (or Iceberg metadata) a source names, on one filesystem."""

    filesystem: pafs.FileSystem
    format: str
    files: tuple[str, ...]
    schema: pa.Schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Every row of the data files, file by file in order, as record batches."""
        for path in self.files:
            dataset = ds.dataset(path, filesystem=self.filesystem, format=self.format)
            yield from dataset.to_batches(use_threads=False)

    def reader(self) -> pa.RecordBatchReader:
        """A stream over every row, which DataFusion consumes without collecting it."""
        if self.format == "iceberg":
            return _iceberg_reader(self.files[0])
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())


def resolve_source(paths: Sequence[str] | str, format: str | None = None) -> ResolvedSource:
    """Find the files of a source and check that they share one schema."""
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise InvalidArgumentError("paths: expected at least one source path")
    if format is not None and format not in (*set(FORMATS.values()), "iceberg"):
        raise InvalidArgumentError(
            f"format: unknown format {format!r}; expected parquet, ipc, csv or iceberg"
        )
    filesystem, first = _filesystem(paths[0])
    located = [first] + [_filesystem(path)[1] for path in paths[1:]]
    if format == "iceberg" or (format is None and _is_iceberg(filesystem, first)):
        if len(located) != 1:
            raise InvalidArgumentError("paths: an Iceberg source is one table")
        metadata = _iceberg_metadata(filesystem, first, paths[0])
        schema = _iceberg_reader(metadata).schema
        return ResolvedSource(filesystem, "iceberg", (metadata,), schema)
    files: list[str] = []
    for path, original in zip(located, paths, strict=True):
        files.extend(_data_files(filesystem, path, original, format))
    formats = {format or FORMATS[PurePosixPath(path).suffix.lower()] for path in files}
    if len(formats) != 1:
        raise SchemaMismatchError(f"paths: mixed formats {sorted(formats)} in one source")
    (chosen,) = formats
    schema = _common_schema(filesystem, files, chosen)
    return ResolvedSource(filesystem, chosen, tuple(files), schema)


def read_table(
    source: ResolvedSource, columns: Sequence[str] | None = None, row_filter: Filter = None
) -> pa.Table:
    """The source's rows, projected and filtered by DataFusion as they stream in."""
    frame = query.plan(source.reader(), columns, row_filter)
    schema = query.check_columns(source.schema, columns)
    batches = list(query.stream_batches(frame))
    if batches:
        schema = batches[0].schema
    return pa.Table.from_batches(batches, schema=schema)


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in path:
        return pafs.LocalFileSystem(), str(PurePosixPath(path))
    try:
        filesystem, inner = pafs.FileSystem.from_uri(path)
        return filesystem, str(inner)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:
        filesystem, located = fsspec.core.url_to_fs(path)
    except (ValueError, ImportError) as error:
        raise SourceError(f"paths: no filesystem understands {path!r}: {error}") from error
    return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem)), located


def _data_files(
    filesystem: pafs.FileSystem, path: str, original: str, format: str | None
) -> list[str]:
    info = filesystem.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise SourceError(f"paths: {original!r} does not exist")
    if info.type == pafs.FileType.File:
        if format is None and PurePosixPath(path).suffix.lower() not in FORMATS:
            raise SourceError(
                f"paths: cannot tell the format of {original!r}; expected a suffix in "
                f"{sorted(FORMATS)} or format="
            )
        return [path]
    selector = pafs.FileSelector(path, recursive=True)
    found = sorted(
        entry.path
        for entry in filesystem.get_file_info(selector)
        if entry.type == pafs.FileType.File
        and not any(part.startswith(("_", ".")) for part in PurePosixPath(entry.path).parts)
        and (format is not None or PurePosixPath(entry.path).suffix.lower() in FORMATS)
    )
    if not found:
        raise SourceError(f"paths: directory {original!r} holds no data files")
    return found


def _common_schema(filesystem: pafs.FileSystem, files: list[str], format: str) -> pa.Schema:
    first: pa.Schema | None = None
    for path in files:
        try:
            schema = ds.dataset(path, filesystem=filesystem, format=format).schema
        except (pa.ArrowInvalid, OSError) as error:
            raise SourceError(f"paths: cannot read {path!r} as {format}: {error}") from error
        schema = schema.remove_metadata()
        if first is None:
            first = schema
        elif not schema.equals(first):
            raise SchemaMismatchError(
                f"paths: {path!r} has schema {_describe(schema)} but {files[0]!r} has "
                f"{_describe(first)}"
            )
    assert first is not None
    return first


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{field.name}: {field.type}" for field in schema) + ")"


def _is_iceberg(filesystem: pafs.FileSystem, path: str) -> bool:
    if path.endswith(_METADATA_SUFFIX):
        return True
    metadata = filesystem.get_file_info(f"{path}/metadata")
    return bool(metadata.type == pafs.FileType.Directory)


def _iceberg_metadata(filesystem: pafs.FileSystem, path: str, original: str) -> str:
    if path.endswith(_METADATA_SUFFIX):
        if filesystem.get_file_info(path).type != pafs.FileType.File:
            raise SourceError(f"paths: {original!r} does not exist")
        return _uri(original)
    entries = filesystem.get_file_info(pafs.FileSelector(f"{path}/metadata"))
    candidates = [e.path for e in entries if e.path.endswith(_METADATA_SUFFIX)]
    if not candidates:
        raise SourceError(f"paths: Iceberg table {original!r} has no *{_METADATA_SUFFIX}")
    latest = max(candidates, key=_metadata_version)
    return _uri(original.rstrip("/") + "/metadata/" + PurePosixPath(latest).name)


def _metadata_version(path: str) -> tuple[int, str]:
    match = re.match(r"v?(\d+)", PurePosixPath(path).name)
    return (int(match.group(1)) if match else -1, path)


def _uri(path: str) -> str:
    return path if "://" in path else Path(path).resolve().as_uri()


def _iceberg_table(metadata: str):  # type: ignore[no-untyped-def]
    try:
        from pyiceberg.table import StaticTable
    except ModuleNotFoundError as error:
        raise SourceError(
            f"paths: {metadata!r} is an Iceberg table, which needs pyiceberg: "
            'pip install "trainer-data-cache[iceberg]"'
        ) from error
    try:
        return StaticTable.from_metadata(metadata)
    except Exception as error:  # pyiceberg raises many kinds for unreadable metadata
        raise SourceError(f"paths: cannot read Iceberg metadata {metadata!r}: {error}") from error


def _iceberg_reader(metadata: str) -> pa.RecordBatchReader:
    reader: pa.RecordBatchReader = _iceberg_table(metadata).scan().to_arrow_batch_reader()
    return reader
