"""A full disk (issue 40, finding 15): the job read ``SupervisorLost ... see supervisor.log``
with that log empty, zero-length ``.state.json.*`` temporaries were left, and submitting printed
a traceback. Now the fact goes where the user looks (the job's status), no temporary is left,
and a submit says what failed in one line. Each test runs on a small tmpfs of its own (root
only: mounting needs it)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trainer_sdk import LocalBackendConfig, TrainerClient, TrainerError, constants
from trainer_sdk.cli import cli
from trainer_sdk.private_files import write_text
from waiting import wait_until

pytestmark = pytest.mark.e2e
JOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "filler"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        # writes until the file system is full (head fails with ENOSPC), then fails
        "trainer": {"command": ["bash", "-c", "head -c 512M /dev/zero > fill; exit 1"]},
    },
}


@pytest.fixture
def small_root(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted at a directory of the test's own (skipped where mounting is
    refused); unmounted at the end."""
    root = tmp_path / "small"
    root.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True, timeout=60)


def fill(root: Path) -> None:
    """Take every free byte of ``root``'s file system."""
    with pytest.raises(OSError) as raised, open(root / "ballast", "wb", buffering=0) as ballast:
        while True:
            ballast.write(b"\0" * (1 << 20))
    assert raised.value.errno == errno.ENOSPC


def temporaries(root: Path) -> list[str]:
    return sorted(str(path) for path in root.rglob(".*.json.*"))


def test_a_write_that_fails_leaves_no_temporary(small_root: Path) -> None:
    write_text(small_root / "state.json", "{}")
    fill(small_root)
    with pytest.raises(OSError) as raised:
        write_text(small_root / "state.json", "x" * (1 << 20))
    assert raised.value.errno == errno.ENOSPC
    assert temporaries(small_root) == []
    assert (small_root / "state.json").read_text() == "{}"  # the old text, whole


def test_a_submit_to_a_full_root_says_so_in_one_line_and_leaves_nothing(
    small_root: Path, tmp_path: Path
) -> None:
    client = TrainerClient(LocalBackendConfig(root=small_root / "jobs"))
    fill(small_root)
    with pytest.raises(TrainerError, match="No space left on device; free space"):
        client.submit(dict(JOB))
    assert not (small_root / "jobs" / "filler").exists()
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: filler}\n"
        "spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ['true']}}\n"
    )
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(small_root / "jobs"), "run", "-f", str(manifest)]
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "No space left on device" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_job_whose_root_fills_reads_failed_for_a_full_disk(small_root: Path) -> None:
    client = TrainerClient(LocalBackendConfig(root=small_root / "jobs"))
    name = client.submit(dict(JOB))

    def ended() -> Any:
        job = client.get_job(name)
        return job if job.status == constants.TRAINJOB_FAILED else None

    job = wait_until(ended, "the job to read Failed")
    assert "DiskFull" in (job.message or "") and str(small_root / "jobs") in (job.message or "")
    assert temporaries(small_root) == []
    client.delete_job(name)
    assert os.listdir(small_root / "jobs") == []
