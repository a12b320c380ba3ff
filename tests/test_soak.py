"""The soak's own parts: the kinds it draws and how it finds the processes it left behind."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from soak import (
    KINDS,
    SUPERVISOR_MODULE,
    draw_kinds,
    our_processes,
    parse_args,
    victim,
    wait_for,
)


@pytest.mark.parametrize("jobs", [7, 12, 200])
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


def test_supervisors_are_found_whatever_the_length_of_the_interpreters_path(
    tmp_path: Path,
) -> None:
    """A hatch environment under a long home directory gave an interpreter path of more than
    120 characters, and the soak, which cut command lines there, found no supervisor."""
    job_dir = tmp_path / "jobs" / "job-1"
    job_dir.mkdir(parents=True)
    python = tmp_path / ("env-" + "v" * 200) / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    command = [str(python), "-c", "import time; time.sleep(60)", SUPERVISOR_MODULE, str(job_dir)]
    assert len(command[0]) > 120
    with subprocess.Popen(command) as guardian, subprocess.Popen(command) as supervisor:
        try:
            (job_dir / "supervisor.pid").write_text(f"{guardian.pid} 0\n")
            assert wait_for(lambda: victim(job_dir, "kill-guardian") == guardian.pid, 30)
            assert victim(job_dir, "kill-supervisor") == supervisor.pid
        finally:
            guardian.kill()
            supervisor.kill()
