"""Persistent caches: atomic writes and tuning results reused across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gems_kernels import caches


def test_atomic_write_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.txt"
    caches.atomic_write(target, "one")
    caches.atomic_write(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["b.txt"]


def test_cache_key_depends_on_every_part() -> None:
    assert caches.cache_key("a", "b") != caches.cache_key("ab")
    assert caches.cache_key("x") == caches.cache_key("x")


def test_tuned_measures_once_then_reads_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    measured: list[int] = []

    def measure(candidate: int) -> float:
        measured.append(candidate)
        return abs(candidate - 3)

    assert caches.tuned("src-1", "dev", [1, 3, 5], measure) == 3
    assert measured == [1, 3, 5]
    monkeypatch.setattr(caches, "_TUNED", {})  # a fresh process has an empty memory cache
    assert caches.tuned("src-1", "dev", [1, 3, 5], measure) == 3
    assert measured == [1, 3, 5]
    assert caches.tuned("src-2", "dev", [1, 3, 5], measure) == 3
    assert measured == [1, 3, 5, 1, 3, 5]


def test_a_second_process_does_not_retune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child process tunes; this process, reading the same cache dir, must not measure."""
    code = (
        "from gems_kernels import caches\n"
        "print(caches.tuned('source', 'dev', [2, 1], lambda c: float(c)))\n"
    )
    env = {**os.environ, "GEMS_CACHE_DIR": str(tmp_path)}
    child = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    assert child.stdout.strip() == "1"
    monkeypatch.setenv("GEMS_CACHE_DIR", str(tmp_path))

    def must_not_measure(candidate: int) -> float:
        raise AssertionError(f"re-tuned candidate {candidate}")

    assert caches.tuned("source", "dev", [2, 1], must_not_measure) == 1


def test_tuned_needs_candidates() -> None:
    with pytest.raises(ValueError, match="candidates"):
        caches.tuned("s", "d", [], lambda c: 0.0)
