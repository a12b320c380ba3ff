"""The on-disk layout of one local job, so that any client or the CLI sees it.

<root>/<name>/trainjob.json     the TrainJob manifest (as sent to a cluster)
<root>/<name>/runtime.json      the runtime manifest it was built against
<root>/<name>/jobset.json       the JobSet from the runtime framework's Plan
<root>/<name>/state.json        JobSet status, TrainJob status, pods (pid, phase, exit code)
<root>/<name>/progress.json     what update_trainjob_status() last wrote
<root>/<name>/metrics/rank-<r>.jsonl  log_metrics() history of rank r (JSON lines)
<root>/<name>/supervisor.pid    the process that runs the job (supervisor.log: its output)
<root>/<name>/logs/<step>.log   each step's output
<root>/<name>/pods/<pod>/       each pod's working directory
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JobDir", "read_json", "write_json"]

_SAFE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def write_json(path: Path, document: Any) -> None:
    """Write atomically: readers see the old or the new document, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as stream:
        json.dump(document, stream, indent=1, default=str)
    os.replace(temporary, path)


def read_json(path: Path) -> Any:
    """The document at ``path``."""
    return json.loads(path.read_text())


@dataclass(frozen=True)
class JobDir:
    """Paths of one job under the backend's root."""

    root: Path
    name: str

    def __post_init__(self) -> None:
        if not _SAFE.match(self.name):
            raise ValueError(f"name: expected a lower-case DNS name, got {self.name!r}")

    @property
    def path(self) -> Path:
        return self.root / self.name

    @property
    def trainjob(self) -> Path:
        return self.path / "trainjob.json"

    @property
    def runtime(self) -> Path:
        return self.path / "runtime.json"

    @property
    def jobset(self) -> Path:
        return self.path / "jobset.json"

    @property
    def state(self) -> Path:
        return self.path / "state.json"

    @property
    def progress(self) -> Path:
        return self.path / "progress.json"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics"

    @property
    def supervisor_pid(self) -> Path:
        return self.path / "supervisor.pid"

    @property
    def supervisor_log(self) -> Path:
        return self.path / "supervisor.log"

    def log(self, step: str) -> Path:
        return self.path / "logs" / f"{step}.log"

    def pod_dir(self, pod: str) -> Path:
        return self.path / "pods" / pod

    def exists(self) -> bool:
        return self.trainjob.is_file()
