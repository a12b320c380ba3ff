"""The soak's own parts: the kinds it draws and how it finds the processes it left behind."""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from soak import KINDS, draw_kinds, our_processes, parse_args


@pytest.mark.parametrize("jobs", [4, 12, 200])
def test_every_kind_is_drawn_and_the_count_is_exact(jobs: int) -> None:
    kinds = Counter(draw_kinds(jobs, random.Random(0)))
    assert sum(kinds.values()) == jobs
    assert set(kinds) == set(KINDS)
    assert kinds["clean"] >= max(kinds[kind] for kind in KINDS[1:])


def test_a_process_naming_the_root_only_in_its_environment_is_found(tmp_path: Path) -> None:
    root = tmp_path / "soak-root"
    env = {**os.environ, "SOAK_PROBE": str(root / "jobs" / "x")}
    with subprocess.Popen(["sleep", "60"], env=env) as child:
        try:
            assert child.pid in our_processes(root)
            assert our_processes(tmp_path / "another-root") == {}
        finally:
            child.kill()
    assert child.pid not in our_processes(root)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--jobs", "0"], "--jobs: expected at least 1", id="no-jobs"),
        pytest.param(["--readers", "-1"], "--readers: expected 0 or more", id="negative-readers"),
    ],
)
def test_bad_arguments_name_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err
