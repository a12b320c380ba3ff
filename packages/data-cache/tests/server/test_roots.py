"""Load roots: which paths and URIs a remote load may name."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from trainer_data_cache import AccessDeniedError
from trainer_data_cache.server.roots import LoadRoots
from trainer_data_cache.sources import resolve_source

S3 = "s3://bucket/datasets"


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        pytest.param(f"{S3}/train", True, id="under-the-prefix"),
        pytest.param(S3, True, id="the-prefix-itself"),
        pytest.param(f"{S3}-private/train", False, id="sibling-with-the-prefix-as-a-start"),
        pytest.param(f"{S3}/../secrets/x", False, id="dot-dot"),
        pytest.param(f"{S3}/./x", False, id="dot"),
        pytest.param(f"{S3}/x?versionId=1", False, id="query"),
        pytest.param("s3://other/datasets/x", False, id="other-bucket"),
        pytest.param("gs://bucket/datasets/x", False, id="other-scheme"),
        pytest.param("/datasets/x", False, id="local-path-against-a-uri-root"),
    ],
)
def test_uri_roots(path: str, allowed: bool) -> None:
    roots = LoadRoots((S3,))
    if allowed:
        roots.check_paths([path])
    else:
        with pytest.raises(AccessDeniedError, match="outside the head's load roots"):
            roots.check_paths([path])


@pytest.mark.parametrize(
    ("relative", "allowed"),
    [
        pytest.param("root/a.parquet", True, id="inside"),
        pytest.param("root", True, id="the-root"),
        pytest.param("root/../other/a.parquet", False, id="dot-dot"),
        pytest.param("rootless/a.parquet", False, id="sibling-with-the-root-as-a-start"),
        pytest.param("root/link/a.parquet", False, id="symlink-out"),
        pytest.param("root/a\0.parquet", False, id="nul"),
    ],
)
def test_local_roots_compare_real_paths(tmp_path: Path, relative: str, allowed: bool) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "other")
    roots = LoadRoots((str(tmp_path / "root"),))
    for path in (str(tmp_path / relative), f"file://{tmp_path / relative}"):
        if allowed:
            roots.check_paths([path])
        else:
            with pytest.raises(AccessDeniedError):
                roots.check_paths([path])


def test_a_directory_source_is_checked_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "other").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "root" / "a.parquet")
    pq.write_table(pa.table({"x": [2]}), tmp_path / "other" / "b.parquet")
    (tmp_path / "root" / "b.parquet").symlink_to(tmp_path / "other" / "b.parquet")
    roots = LoadRoots((str(tmp_path / "root"),))
    roots.check_paths([str(tmp_path / "root")])
    with pytest.raises(AccessDeniedError, match=r"b\.parquet"):
        roots.check_source(resolve_source(str(tmp_path / "root")))


def test_no_roots_means_remote_loads_are_off() -> None:
    with pytest.raises(AccessDeniedError, match="remote loads are off"):
        LoadRoots().check_paths(["/anything"])
