"""The local backend's public reads of a job directory, without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk import LocalBackendConfig
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.private_files import write_json


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        pytest.param(None, 0, id="no-log-yet"),
        pytest.param("", 0, id="empty"),
        pytest.param("a\nb\n", 2, id="whole-lines"),
        pytest.param("a\nb", 2, id="a-last-line-without-its-newline"),
    ],
)
def test_log_length_counts_the_lines_of_the_steps_log(
    tmp_path: Path, text: str | None, lines: int
) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path))
    job_dir = JobDir(tmp_path, "job")
    write_json(job_dir.trainjob, {"metadata": {"name": "job"}})
    if text is not None:
        job_dir.log("node-0").parent.mkdir(parents=True)
        job_dir.log("node-0").write_text(text)
    assert backend.log_length("job", "node-0") == lines


def test_the_jobset_manifest_carries_the_status_the_supervisor_reported(tmp_path: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path))
    job_dir = JobDir(tmp_path, "job")
    write_json(job_dir.trainjob, {"metadata": {"name": "job"}})
    assert backend.get_jobset_manifest("job") is None  # a killed submission wrote none
    write_json(job_dir.jobset, {"kind": "JobSet", "metadata": {"name": "job"}})
    write_json(job_dir.state, {"jobset": {"restarts": 2}})
    assert backend.get_jobset_manifest("job") == {
        "kind": "JobSet",
        "metadata": {"name": "job"},
        "status": {"restarts": 2},
    }
