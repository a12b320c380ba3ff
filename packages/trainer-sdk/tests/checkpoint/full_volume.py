"""Checkpointing on a volume that fills up, for ``test_full_volume.py``: run as root inside a
mount namespace of its own (``unshare --mount``), it mounts a 1 MiB tmpfs at ``VOLUME`` and
prints one JSON line of what happened:

1. a checkpoint of step 1 is saved, then the rest of the volume is filled by another file;
2. a new process's ``restore()`` (the job restarted) resumes step 1 although its resume log
   cannot be appended to; ``save(2)`` fails, naming the error, and leaves no directory;
3. the filler gives way to a save cut short by a kill (``step-3`` holding the space): the next
   ``save(4)`` first removes it, and succeeds.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn
from trainer_sdk import checkpoint
from trainer_sdk.checkpoint import _layout


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the volume has no space left."""
    with open(path, "wb") as stream, contextlib.suppress(OSError):
        while True:
            stream.write(bytes(64 * 1024))
            stream.flush()


def checkpointer(directory: Path) -> checkpoint.Checkpointer:
    torch.manual_seed(0)
    model = nn.Linear(64, 64)
    optimizer = torch.optim.Adam(model.parameters())
    return checkpoint.Checkpointer({"model": model, "optimizer": optimizer}, directory=directory)


def main(volume: Path) -> dict[str, Any]:
    volume.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(volume)], check=True)
    directory = volume / "job"
    report: dict[str, Any] = {}
    with checkpointer(directory) as ckpt:
        ckpt.save(1)
    fill(volume / "filler")
    with checkpointer(directory) as ckpt:
        report["restored"] = ckpt.restore()
        try:
            ckpt.save(2)
            report["save_error"] = None
        except checkpoint.CheckpointError as error:
            report["save_error"] = str(error)
    report["after_failed_save"] = sorted(p.name for p in directory.iterdir())
    (volume / "filler").unlink()
    partial = _layout.step_dir(directory, 3)
    partial.mkdir()
    fill(partial / "tensors.part")
    with checkpointer(directory) as ckpt:
        report["restored_again"] = ckpt.restore()
        ckpt.save(4)
    report["complete"] = [found.step for found in checkpoint.checkpoints(directory)]
    return report


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
