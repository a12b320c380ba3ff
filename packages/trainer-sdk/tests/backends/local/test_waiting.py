"""Waiting on a local job returns when its state is rewritten, not at the next polling interval."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from trainer_sdk import LocalBackendConfig
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.private_files import write_json

# A bound that holds on a loaded machine, far below the polling interval asked for.
NOTICE_BOUND_S = 5.0
POLLING_INTERVAL_S = 60.0


def test_a_pause_ends_when_the_supervisor_rewrites_the_state(tmp_path: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path))
    job_dir = JobDir(tmp_path, "job-a")
    write_json(job_dir.trainjob, {"metadata": {"name": "job-a"}})
    write_json(job_dir.state, {"finished": False})
    waiter = threading.Thread(target=backend._pause, args=("job-a", POLLING_INTERVAL_S))
    begin = time.monotonic()
    waiter.start()
    # Rewritten until the pause returns: whichever thread runs first, one rewrite follows the
    # state the pause started from.
    while waiter.is_alive() and time.monotonic() - begin < NOTICE_BOUND_S:
        write_json(job_dir.state, {"finished": True})
        waiter.join(0.05)
    assert not waiter.is_alive(), "the pause outlasted every rewrite of the state"


def test_a_pause_without_change_lasts_its_interval(tmp_path: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path))
    job_dir = JobDir(tmp_path, "job-b")
    write_json(job_dir.trainjob, {"metadata": {"name": "job-b"}})
    write_json(job_dir.state, {"finished": False})
    begin = time.monotonic()
    backend._pause("job-b", 0.2)
    assert time.monotonic() - begin >= 0.2
