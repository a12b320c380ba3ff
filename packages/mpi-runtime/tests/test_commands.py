import json
import shlex
import subprocess
import sys

import pytest
from mpi_runtime import InvalidArgumentError, mpirun_command, shell_command, with_mpi4py

CMD = ["python3", "train.py", "--lr", "0.1"]


@pytest.mark.parametrize(
    ("impl", "options", "expected"),
    [
        pytest.param("OpenMPI", {}, ["mpirun", *CMD], id="openmpi-bare"),
        pytest.param(
            "OpenMPI",
            {
                "np": 4,
                "hostfile": "/etc/mpi/hostfile",
                "allow_run_as_root": True,
                "oversubscribe": True,
                "bind_to": "none",
                "tag_output": True,
                "mca": {"btl": "self,tcp"},
                "forward_env": ["PATH", "NCCL_DEBUG"],
                "set_env": {"MASTER_PORT": "29500"},
            },
            [
                "mpirun", "-np", "4", "--hostfile", "/etc/mpi/hostfile", "--allow-run-as-root",
                "--oversubscribe", "--bind-to", "none", "--tag-output", "--mca", "btl", "self,tcp",
                "-x", "PATH", "-x", "NCCL_DEBUG", "-x", "MASTER_PORT=29500", *CMD,
            ],
            id="openmpi-everything",
        ),
        pytest.param(
            "Intel",
            {
                "np": 4,
                "hostfile": "/etc/mpi/hostfile",
                "allow_run_as_root": True,
                "oversubscribe": True,
                "bind_to": "core",
                "tag_output": True,
                "forward_env": ["PATH", "NCCL_DEBUG"],
                "set_env": {"MASTER_PORT": "29500"},
            },
            [
                "mpirun", "-n", "4", "-f", "/etc/mpi/hostfile", "-bind-to", "core",
                "-prepend-rank", "-genv", "MASTER_PORT", "29500",
                *CMD,
            ],
            id="intel-hydra",
        ),
        pytest.param(
            "MPICH",
            {"np": 2, "mpirun": "/opt/mpich/bin/mpiexec"},
            ["/opt/mpich/bin/mpiexec", "-n", "2", *CMD],
            id="mpich-custom-mpirun",
        ),
    ],
)  # fmt: skip
def test_mpirun_command_per_implementation(
    impl: str, options: dict[str, object], expected: list[str]
) -> None:
    assert mpirun_command(impl, CMD, **options) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("impl", "command", "options", "argument"),
    [
        pytest.param("OpenMPI", [], {}, "command", id="empty-command"),
        pytest.param("OpenMPI", "python x.py", {}, "command", id="string-command"),
        pytest.param("OpenMPI", CMD, {"np": 0}, "np", id="zero-np"),
        pytest.param("OpenMPI", CMD, {"forward_env": ["A=B"]}, "forward_env", id="bad-forward"),
        pytest.param("OpenMPI", CMD, {"set_env": {"1X": "y"}}, "set_env", id="bad-set-name"),
        pytest.param("MPICH", CMD, {"mca": {"btl": "tcp"}}, "mca", id="mca-on-hydra"),
    ],
)
def test_mpirun_command_rejects_bad_input(
    impl: str, command: object, options: dict[str, object], argument: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^{argument}: "):
        mpirun_command(impl, command, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param(["train.py", "-x"], ["/py", "-m", "mpi4py", "train.py", "-x"], id="script"),
        pytest.param(["python", "t.py"], ["python", "-m", "mpi4py", "t.py"], id="python-script"),
        pytest.param(
            ["/usr/bin/python3.11", "-m", "pkg.train"],
            ["/usr/bin/python3.11", "-m", "mpi4py", "-m", "pkg.train"],
            id="python-module",
        ),
        pytest.param(["python3", "-c", "1"], ["python3", "-m", "mpi4py", "-c", "1"], id="code"),
        pytest.param(["python3", "-m", "mpi4py", "t.py"], None, id="already-wrapped"),
        pytest.param(["python3", "-u", "t.py"], None, id="unknown-python-flag-left-alone"),
        pytest.param(["./a.out", "x.py"], None, id="not-python"),
        pytest.param(["pythonic", "x.py"], None, id="python-prefix-only"),
    ],
)
def test_with_mpi4py_wraps_python_programs_only(
    command: list[str], expected: list[str] | None
) -> None:
    assert with_mpi4py(command, python="/py") == (command if expected is None else expected)


ONE_LINE = "import json, os, sys; os.write(1, (json.dumps({}) + chr(10)).encode())"
"""Prints a JSON line in one write, so that lines of different ranks never interleave."""
AWKWARD = ["a b", "it's", '"q"', "$HOME", "x;y", "*", "", "-np", "ünï"]


def test_shell_command_round_trips_awkward_arguments() -> None:
    argv = ["prog", *AWKWARD]
    assert shlex.split(shell_command(argv)) == argv


@pytest.mark.e2e
def test_awkward_arguments_reach_every_rank_unchanged(open_mpi: None) -> None:
    argv = mpirun_command(
        "OpenMPI",
        [sys.executable, "-c", ONE_LINE.format("sys.argv[1:]"), *AWKWARD],
        np=2,
        allow_run_as_root=True,
        oversubscribe=True,
    )
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [AWKWARD, AWKWARD]
