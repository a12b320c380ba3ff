"""A local job whose command needs a module the job's Python lacks is refused before it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from trainer_sdk import CustomTrainer, LocalBackendConfig, MissingPackageError, TrainerClient
from trainer_sdk.backends.local.submit.needs import CommandNeed, check_commands

ABSENT = CommandNeed("absent-tool", "module_nobody_has", "absent-dist", "pip install absent-dist")
PRESENT = CommandNeed("present-tool", "json", "present-dist", "pip install present-dist")


@pytest.mark.parametrize(
    ("commands", "packages", "refused"),
    [
        pytest.param([["absent-tool", "--x"]], [], True, id="command-itself"),
        pytest.param([["bash", "-c", "set -e\nabsent-tool a.py"]], [], True, id="inside-a-script"),
        pytest.param([["present-tool"]], [], False, id="module-importable"),
        pytest.param([["python", "train.py"]], [], False, id="command-not-used"),
        pytest.param([["my-absent-tool"], ["absent-tool.sh"]], [], False, id="longer-words"),
        pytest.param([["absent-tool"]], ["Absent_Dist>=1"], False, id="packages-to-install"),
    ],
)
def test_check_commands(commands: list[list[str]], packages: list[str], refused: bool) -> None:
    if refused:
        with pytest.raises(MissingPackageError) as raised:
            check_commands(commands, sys.executable, packages, (ABSENT, PRESENT))
        assert str(raised.value) == (
            f"the job runs 'absent-tool', which needs the module 'module_nobody_has', but "
            f"{sys.executable} cannot import it; install it with: pip install absent-dist"
        )
    else:
        check_commands(commands, sys.executable, packages, (ABSENT, PRESENT))


def train() -> None:
    print("never runs")


def bare_python(tmp_path: Path) -> str:
    """A fresh venv's Python: the standard library only."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def test_torch_job_is_refused_before_it_starts_when_its_python_has_no_torch(
    tmp_path: Path,
) -> None:
    python = bare_python(tmp_path)
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", python=python))
    with pytest.raises(
        MissingPackageError, match=r"install it with: pip install \"trainer-sdk\[torch\]\""
    ):
        client.train(trainer=CustomTrainer(func=train, num_nodes=2))
    assert list((tmp_path / "jobs").iterdir()) == []


def test_a_fine_tune_is_refused_before_it_starts_when_its_python_has_no_engine(
    tmp_path: Path,
) -> None:
    """The engine's module, checked by the runtime's framework label; ``tune`` as a command."""
    from trainer_runtime import builtin_runtimes
    from trainer_sdk.backends.local.submit.needs import check_engine

    python = bare_python(tmp_path)
    with pytest.raises(MissingPackageError) as raised:
        check_engine(builtin_runtimes()["trl-cpu"].to_dict(), python)
    assert str(raised.value).endswith('install it with: pip install "trainer-sdk[trl]"')
    check_engine(builtin_runtimes()["torch-distributed"].to_dict(), python)  # no engine
    with pytest.raises(
        MissingPackageError, match=r"'tune'.*pip install \"trainer-sdk\[torchtune\]"
    ):
        check_commands([["tune", "run", "lora_finetune_single_device"]], python)
