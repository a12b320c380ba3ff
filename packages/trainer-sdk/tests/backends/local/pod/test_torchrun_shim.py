"""The local ``torchrun``: one process per node without the agent, anything else to torchrun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from trainer_sdk.backends.local.pod import torchrun_shim
from trainer_sdk.backends.local.pod.torchrun_shim import _parse, worker_env

TRAINJOB_ENV = {
    "PET_NNODES": "3",
    "PET_NPROC_PER_NODE": "1",
    "PET_NODE_RANK": "2",
    "PET_MASTER_ADDR": "127.0.0.1",
    "PET_MASTER_PORT": "29411",
}


def test_a_trainjob_node_of_one_process_gets_torchruns_worker_env() -> None:
    options, program = _parse(["train.py", "--lr", "1"], TRAINJOB_ENV)
    assert program == ["train.py", "--lr", "1"]
    env = worker_env(options)
    assert {key: env[key] for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")} == {
        "RANK": "2",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "3",
        "LOCAL_WORLD_SIZE": "1",
    }
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["GROUP_RANK"]) == (
        "127.0.0.1",
        "29411",
        "2",
    )


def test_a_module_runs_as_python_m_module() -> None:
    """``torchrun -m trainer_sdk.training.engines trl ...``, as the fine-tuning runtimes run."""
    options, program = _parse(["-m", "pkg.train", "--lr", "1"], TRAINJOB_ENV)
    assert program == ["-m", "pkg.train", "--lr", "1"]
    assert worker_env(options)["WORLD_SIZE"] == "3"


def test_command_line_options_win_over_env() -> None:
    options, program = _parse(["--nnodes=2", "--node-rank", "1", "t.py"], TRAINJOB_ENV)
    assert (options["nnodes"], options["node_rank"], program) == ("2", "1", ["t.py"])


@pytest.mark.parametrize(
    ("args", "env"),
    [
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_NPROC_PER_NODE": "2"}, id="two-per-node"),
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_NPROC_PER_NODE": "auto"}, id="auto"),
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_NNODES": "1:3"}, id="elastic"),
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_MAX_RESTARTS": "3"}, id="restarts"),
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_RDZV_BACKEND": "c10d"}, id="c10d"),
        pytest.param(["t.py"], {**TRAINJOB_ENV, "PET_RDZV_CONF": "x=1"}, id="unknown-env"),
        pytest.param(["--standalone", "t.py"], TRAINJOB_ENV, id="unknown-option"),
        pytest.param(["--no-python", "echo"], TRAINJOB_ENV, id="no-python"),
        pytest.param(["--nnodes"], TRAINJOB_ENV, id="no-value"),
        pytest.param([], TRAINJOB_ENV, id="no-script"),
    ],
)
def test_anything_else_is_left_to_torchrun(args: list[str], env: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        worker_env(_parse(args, env)[0])


def test_the_worker_runs_unbuffered_with_its_env(tmp_path: Path) -> None:
    script = tmp_path / "show.py"
    script.write_text(
        "import os, sys\nprint(os.environ['RANK'], sys.argv[1:], sys.stdout.write_through)\n"
    )
    result = subprocess.run(
        [sys.executable, torchrun_shim.__file__, str(script), "--epochs", "2"],
        env={**TRAINJOB_ENV, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, "2 ['--epochs', '2'] True\n"), result.stderr


def test_the_shim_imports_no_package() -> None:
    """It must start as fast as Python: torch and the SDK are the worker's business."""
    result = subprocess.run(
        [sys.executable, "-c", f"import runpy, sys; runpy.run_path({torchrun_shim.__file__!r}); "
         "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'trainer_sdk')))"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.stdout == "[]\n", result.stderr
