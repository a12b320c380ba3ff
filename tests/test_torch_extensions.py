"""Test runs build torch extensions apart: seeded from built ops, publishing new ones atomically."""

from __future__ import annotations

import os
from pathlib import Path

from torch_extensions import built_ops, publish_built_ops, seed_private_root

OP = Path("py311_cpu") / "op_a"


def make_op(root: Path, op: Path, *, built: bool = True, locked: bool = False) -> Path:
    directory = root / op
    directory.mkdir(parents=True)
    (directory / "build.ninja").write_text("rules\n")
    if built:
        (directory / f"{op.name}.so").write_bytes(b"library")
    if locked:
        (directory / "lock").touch()
    return directory


def test_only_finished_builds_count(tmp_path: Path) -> None:
    make_op(tmp_path, OP)
    make_op(tmp_path, OP.parent / "half_built", built=False)
    make_op(tmp_path, OP.parent / "being_built", locked=True)
    assert built_ops(tmp_path) == [OP]


def test_a_run_starts_from_copies_that_keep_their_times(tmp_path: Path) -> None:
    shared, private = tmp_path / "shared", tmp_path / "private"
    library = make_op(shared, OP) / "op_a.so"
    os.utime(library, (1_000_000, 1_000_000))
    make_op(shared, OP.parent / "being_built", locked=True)
    assert seed_private_root(shared, private) == [OP]
    assert (private / OP / "op_a.so").stat().st_mtime == 1_000_000
    assert not (private / OP.parent / "being_built").exists()
    assert seed_private_root(tmp_path / "absent", tmp_path / "other") == []


def test_new_ops_are_published_whole_and_existing_ones_are_left_alone(tmp_path: Path) -> None:
    shared, private = tmp_path / "shared", tmp_path / "private"
    make_op(private, OP)
    make_op(private, OP.parent / "op_b")
    existing = make_op(shared, OP.parent / "op_b")
    (existing / "op_b.so").write_bytes(b"theirs")
    assert publish_built_ops(private, shared) == [OP]
    assert (shared / OP / "op_a.so").read_bytes() == b"library"
    assert (existing / "op_b.so").read_bytes() == b"theirs"
    assert [path.name for path in (shared / OP.parent).iterdir() if path.name.startswith(".")] == []
