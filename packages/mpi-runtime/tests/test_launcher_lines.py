"""Launcher command lines (mpirun, deepspeed, mpi-launch) read into one mpi-launch argv."""

from __future__ import annotations

import pytest
from mpi_runtime import InvalidArgumentError, to_mpi_launch

LOCAL = ["--loopback"]


@pytest.mark.parametrize(
    ("command", "expected", "env"),
    [
        pytest.param(
            ["mpirun", "--hostfile", "/h", "-np", "4", "python", "t.py"],
            ["--hostfile", "/h", "--np", "4", "--loopback", "--", "python", "t.py"],
            {},
            id="mpirun-hostfile-np",
        ),
        pytest.param(
            ["mpirun", "-x", "A=1", "-x", "B", "--mca", "btl_base_verbose", "1", "--", "a.out"],
            ["-x", "A", "-x", "B", "--loopback", "--", "a.out"],
            {"A": "1", "OMPI_MCA_btl_base_verbose": "1"},
            id="mpirun-env-and-mca",
        ),
        pytest.param(
            ["/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe", "hostname"],
            ["--oversubscribe", "--loopback", "--", "hostname"],
            {},
            id="mpirun-flags",
        ),
        pytest.param(
            ["mpi-launch", "--np", "2", "--", "python", "-c", "--"],
            ["--np", "2", "--loopback", "--", "python", "-c", "--"],
            {},
            id="mpi-launch-options-kept",
        ),
        pytest.param(
            ["mpirun", "--bind-to", "core", "--map-by", "ppr:1:node", "--report-bindings", "a"],
            ["--loopback", "--", "a"],
            {},
            id="mpirun-binding-policies-dropped",
        ),
        pytest.param(
            [
                "deepspeed",
                "-H",
                "/h",
                "--launcher",
                "OpenMPI",
                "--master_addr",
                "n-0",
                "--master_port=29500",
                "--ssh_port",
                "2222",
                "--no_ssh_check",
                "--launcher_args",
                "--mca btl_tcp_if_include eth0 -x NCCL_DEBUG=INFO",
                "t.py",
                "--lr",
                "1",
            ],
            [
                "--hostfile",
                "/h",
                "-x",
                "NCCL_DEBUG",
                "--loopback",
                "--",
                "python",
                "t.py",
                "--lr",
                "1",
            ],
            {"OMPI_MCA_btl_tcp_if_include": "eth0", "NCCL_DEBUG": "INFO"},
            id="deepspeed-openmpi",
        ),
        pytest.param(
            ["deepspeed", "--launcher", "mpich", "--module", "pkg.train"],
            ["--loopback", "--", "python", "-m", "pkg.train"],
            {},
            id="deepspeed-module",
        ),
        pytest.param(
            ["deepspeed", "--launcher=impi", "--no_python", "./a.out", "x"],
            ["--loopback", "--", "./a.out", "x"],
            {},
            id="deepspeed-no-python",
        ),
    ],
)
def test_to_mpi_launch(command: list[str], expected: list[str], env: dict[str, str]) -> None:
    argv, option_env = to_mpi_launch(command, "launcher", LOCAL, wait_timeout=60)
    assert argv == ["mpi-launch", "--wait-timeout", "60", *expected]
    assert option_env == env


@pytest.mark.parametrize(
    ("command", "message"),
    [
        pytest.param(
            ["mpirun", "--cpus-per-rank", "2", "a.out"],
            r"launcher\[1\]: mpirun option '--cpus-per-rank'",
            id="unknown-option",
        ),
        pytest.param(
            ["torchrun", "train.py"],
            "starts with mpirun, deepspeed or mpi-launch, got 'torchrun'",
            id="not-an-mpi-launcher",
        ),
        pytest.param(
            ["deepspeed", "train.py"],
            r"deepspeed --launcher 'pdsh' is not an MPI launcher",
            id="deepspeed-default-launcher-is-pdsh",
        ),
        pytest.param(
            ["deepspeed", "--launcher", "openmpi", "--num_gpus", "2", "t.py"],
            r"launcher\[3\]: deepspeed option '--num_gpus' is not translated",
            id="deepspeed-unknown-option",
        ),
        pytest.param(
            ["deepspeed", "--launcher", "openmpi"],
            "deepspeed has no script to run",
            id="deepspeed-no-script",
        ),
        pytest.param(
            ["deepspeed", "--launcher", "openmpi", "--launcher_args", "-np 2 a.out", "t.py"],
            "--launcher_args: expected mpirun options only, got 'a.out'",
            id="deepspeed-launcher-args-with-a-program",
        ),
        pytest.param(["mpirun", "-np", "2"], "mpirun has no program", id="no-program"),
    ],
)
def test_to_mpi_launch_refuses(command: list[str], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        to_mpi_launch(command, "launcher", LOCAL, wait_timeout=60)
