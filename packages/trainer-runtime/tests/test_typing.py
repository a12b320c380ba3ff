"""Plugins are typed: a misspelled TrainJob field in a plugin fails ``mypy --strict``.

The maintainer's experiment of issue 12, kept as a test: the Torch plugin reads
``spec.trainer.numProcPerNode`` as ``trainer.num_proc_per_node``; renamed to
``num_procs_per_node``, mypy must refuse it (with dict look-ups it passed, and the TrainJob's
setting was silently ignored). mypy checks the real module with the renamed text shadowing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trainer_runtime.plugins.torch

mypy_api = pytest.importorskip("mypy.api")

ACCESS = "trainer.num_proc_per_node"
TYPO = "trainer.num_procs_per_node"


def test_misspelled_trainjob_field_in_torch_plugin_fails_type_checking(tmp_path: Path) -> None:
    source = Path(trainer_runtime.plugins.torch.__file__)
    text = source.read_text()
    assert ACCESS in text, f"{source} no longer reads {ACCESS}: pick another field to misspell"
    shadow = tmp_path / "torch.py"
    shadow.write_text(text.replace(ACCESS, TYPO))
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--shadow-file",
            str(source),
            str(shadow),
            str(source),
        ]
    )
    assert status == 1, stdout + stderr
    assert '"Trainer" has no attribute "num_procs_per_node"' in stdout, stdout + stderr
    assert stdout.count("error:") == 1, stdout
