"""The rank entrypoint: a normal return exits 0 with a normal exit's effects, a failure fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from trainer_sdk.status import failures
from trainer_sdk.training import rank_entrypoint

ENTRYPOINT = rank_entrypoint.__file__


def run_rank(
    tmp_path: Path, code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``code`` written to ``user.py`` and run through the entrypoint in a clean interpreter
    (with only ``env`` added to this process's environment, MPI and torchrun variables removed)."""
    (tmp_path / "user.py").write_text(textwrap.dedent(code))
    launched = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "TORCHELASTIC_RUN_ID")
    base = {name: value for name, value in os.environ.items() if name not in launched}
    return subprocess.run(
        [sys.executable, "-I", ENTRYPOINT, "user.py", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**base, **(env or {})},
    )


def test_a_normal_return_runs_atexit_handlers_and_flushes_every_output(tmp_path: Path) -> None:
    result = run_rank(
        tmp_path,
        """
        import atexit, sys, threading, time
        atexit.register(lambda: print("atexit ran"))
        unclosed = open("out.txt", "w")
        unclosed.write("kept")
        binary = open("out.bin", "wb")
        binary.write(b"bytes")
        done = []
        threading.Thread(target=lambda: (time.sleep(0.2), done.append(1))).start()
        atexit.register(lambda: print("thread finished first:", done == [1]))
        print(__name__, sys.argv[1:], end="")
        print("to stderr", end="", file=sys.stderr)
        """,
        "--lr",
        "0.1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "__main__ ['--lr', '0.1']thread finished first: True",
        "atexit ran",
    ]
    assert result.stderr == "to stderr"
    assert (tmp_path / "out.txt").read_text() == "kept"
    assert (tmp_path / "out.bin").read_bytes() == b"bytes"


def test_a_failure_fails_the_rank_with_the_user_traceback(tmp_path: Path) -> None:
    result = run_rank(
        tmp_path,
        """
        import atexit
        atexit.register(lambda: print("atexit ran"))

        def train():
            raise RuntimeError("loss is nan")

        train()
        """,
    )
    assert result.returncode == 1
    assert result.stdout == "atexit ran\n"
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == '  File "user.py", line 8, in <module>'
    assert lines[-1] == "RuntimeError: loss is nan"
    assert "rank_entrypoint" not in result.stderr and "runpy" not in result.stderr


@pytest.mark.parametrize(
    ("call", "status", "stderr"),
    [
        pytest.param("sys.exit()", 0, "", id="none"),
        pytest.param("sys.exit(3)", 3, "", id="int"),
        pytest.param("sys.exit('bad config')", 1, "bad config\n", id="message"),
    ],
)
def test_sys_exit_keeps_python_exit_status(
    tmp_path: Path, call: str, status: int, stderr: str
) -> None:
    result = run_rank(tmp_path, f"import sys\n{call}\n")
    assert (result.returncode, result.stderr) == (status, stderr)


def test_a_failing_atexit_handler_is_reported_as_python_does(tmp_path: Path) -> None:
    code = "import atexit\natexit.register(lambda: 1 / 0)\n"
    result = run_rank(tmp_path, code)
    plain = subprocess.run(
        [sys.executable, "-I", "user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == plain.returncode == 0
    assert "ZeroDivisionError" in result.stderr and "ZeroDivisionError" in plain.stderr


def test_user_code_imports_modules_beside_it(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    result = run_rank(tmp_path, "import helper\nprint(helper.VALUE)\n")
    assert (result.returncode, result.stdout) == (0, "42\n"), result.stderr


def test_the_entrypoint_imports_only_the_standard_library() -> None:
    """Pods run it in images without the SDK."""
    imported = {
        line.split()[1].split(".")[0]
        for line in Path(ENTRYPOINT).read_text().splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_objects_are_not_touched_while_files_are_flushed(tmp_path: Path) -> None:
    """isinstance() reads ``__class__``: torch's deprecated ``reduce_op`` warned at every exit."""
    result = run_rank(
        tmp_path,
        """
        class Touchy:
            @property
            def __class__(self):
                raise RuntimeError("touched")

        kept = Touchy()
        """,
    )
    assert (result.returncode, result.stderr) == (0, "")


FAILING = """
def train():
    raise RuntimeError("loss is nan")

train()
"""


@pytest.mark.parametrize("variable", ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"])
def test_an_mpi_rank_tags_its_traceback_so_the_failure_names_it(
    tmp_path: Path, variable: str
) -> None:
    result = run_rank(tmp_path, FAILING, env={variable: "3"})
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "[rank3]: Traceback (most recent call last):"
    assert all(line.startswith("[rank3]: ") for line in lines), lines
    summary = failures.summarize(["mpirun's own line", *lines])
    assert summary is not None
    assert (summary.exception, summary.rank) == ("RuntimeError: loss is nan", 3)


def test_under_torchrun_lines_stay_as_they_are(tmp_path: Path) -> None:
    """torchrun tags its ranks' lines itself; an MPI variable beside it changes nothing."""
    result = run_rank(
        tmp_path, FAILING, env={"TORCHELASTIC_RUN_ID": "job", "OMPI_COMM_WORLD_RANK": "3"}
    )
    assert result.stderr.splitlines()[0] == "Traceback (most recent call last):"


def test_a_torchrun_rank_failing_outside_torch_distributed_names_its_rank(tmp_path: Path) -> None:
    """torch tags a traceback only once init_process_group installed its hook; before, the
    failure lost its rank."""
    result = run_rank(tmp_path, FAILING, env={"TORCHELASTIC_RUN_ID": "job", "RANK": "2"})
    lines = result.stderr.splitlines()
    assert all(line.startswith("[rank2]: ") for line in lines), lines
    summary = failures.summarize(lines)
    assert summary is not None and summary.rank == 2


GEMS_CHECK = """
from gems_kernels.dispatch import enabled_sessions
sessions = enabled_sessions()
print("gems sessions:", len(sessions), "overloads:", len(sessions[0].overloads) if sessions else 0)
"""


def run_gems_rank(
    tmp_path: Path, code: str, env: dict[str, str], *flags: str
) -> subprocess.CompletedProcess[str]:
    """``code`` through the entrypoint with this process's environment (its PYTHONPATH: the
    gems_kernels under test) plus ``env``; ``flags`` for the interpreter (``-I -S``: no
    site-packages, so no gems_kernels). The entrypoint runs from a copy, as the SDK writes it
    into the job (beside trainer_sdk/types.py it would shadow the standard ``types``)."""
    (tmp_path / "user.py").write_text(textwrap.dedent(code))
    entrypoint = tmp_path / "entrypoint.py"
    entrypoint.write_text(Path(ENTRYPOINT).read_text())
    return subprocess.run(
        [sys.executable, *flags, str(entrypoint), "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "TRITON_INTERPRET": "1", **env},
    )


def test_trainer_gems_enables_the_kernels_before_the_user_file(tmp_path: Path) -> None:
    result = run_gems_rank(tmp_path, GEMS_CHECK, {"TRAINER_GEMS": "1"})
    assert result.returncode == 0, result.stderr
    sessions, overloads = result.stdout.split("overloads:")
    assert sessions.strip() == "gems sessions: 1"
    assert int(overloads) > 300  # every registered overload


def test_without_trainer_gems_the_rank_runs_on_aten(tmp_path: Path) -> None:
    for value in ("", "0", "false"):
        result = run_gems_rank(tmp_path, GEMS_CHECK, {"TRAINER_GEMS": value})
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "gems sessions: 0 overloads: 0", value


def test_a_bad_trainer_gems_value_fails_the_rank_naming_it(tmp_path: Path) -> None:
    result = run_rank(tmp_path, "print('user code ran')", env={"TRAINER_GEMS": "yes"})
    assert result.returncode == 1
    assert "user code ran" not in result.stdout
    assert "TRAINER_GEMS: expected 1, true, 0 or false, got 'yes'" in result.stderr


def test_trainer_gems_without_the_package_fails_the_rank_naming_it(tmp_path: Path) -> None:
    result = run_gems_rank(tmp_path, "print('user code ran')", {"TRAINER_GEMS": "1"}, "-I", "-S")
    assert result.returncode == 1
    assert "user code ran" not in result.stdout
    assert "TRAINER_GEMS=1 asks for gems kernels, but gems_kernels does not import" in (
        result.stderr
    )
    assert "pip install 'trainer-sdk[torch]'" in result.stderr
