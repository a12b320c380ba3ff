"""Process identity and containment with real processes: PID plus start time, tokens, trees."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from trainer_sdk.backends.local.supervisor import processes
from trainer_sdk.backends.local.supervisor.processes import JOB_TOKEN_ENV, ProcessIdentity
from waiting import wait_until

TIMEOUT_SECONDS = 30


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def test_an_identity_is_the_pid_and_its_start_time(sleeper: subprocess.Popen[bytes]) -> None:
    identity = ProcessIdentity.of(sleeper.pid)
    assert identity is not None and identity.pid == sleeper.pid and identity.alive()
    assert ProcessIdentity.parse(str(identity)) == identity
    assert ProcessIdentity.parse(str(sleeper.pid)) is None  # a bare PID proves nothing


def test_a_pid_that_now_belongs_to_another_process_is_not_signalled(
    sleeper: subprocess.Popen[bytes],
) -> None:
    identity = ProcessIdentity.of(sleeper.pid)
    assert identity is not None
    reused = ProcessIdentity(sleeper.pid, identity.start_time - 1)  # as if recorded earlier
    assert not reused.alive()
    assert not reused.send(signal.SIGKILL)
    assert sleeper.poll() is None
    assert identity.send(signal.SIGKILL)
    assert sleeper.wait(timeout=TIMEOUT_SECONDS) == -signal.SIGKILL


def test_a_reaped_or_zombie_process_is_not_alive() -> None:
    process = subprocess.Popen(["sleep", "300"])
    identity = ProcessIdentity.of(process.pid)
    assert identity is not None
    process.kill()
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
    assert not identity.alive() and ProcessIdentity.of(process.pid) is None
    process.wait()
    assert not identity.send(signal.SIGTERM)


def test_find_gets_descendants_and_token_carriers_but_not_what_is_kept() -> None:
    token = "feedc0de"
    script = "import subprocess, sys, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    tree = subprocess.Popen([sys.executable, "-c", script])
    carrier = subprocess.Popen(["sleep", "300"], env={**os.environ, JOB_TOKEN_ENV: token})
    scoped = subprocess.Popen(["sleep", "300"], env={**os.environ, JOB_TOKEN_ENV: f"{token}.x"})
    try:
        root = ProcessIdentity.of(tree.pid)
        assert root is not None

        def found(**kwargs: object) -> set[int]:
            return {process.pid for process in processes.find(**kwargs)}  # type: ignore[arg-type]

        wait_until(lambda: len(found(roots=[root])) >= 2, "its child to start", TIMEOUT_SECONDS)
        assert len(found(roots=[root])) == 2 and tree.pid in found(roots=[root])
        assert found(token=token) == {carrier.pid, scoped.pid}
        assert found(token=token, scoped=True) == {carrier.pid}
        assert found(roots=[root], token=token, keep=[tree.pid, scoped.pid]) == {carrier.pid}
        processes.terminate(lambda: processes.find([root], token), grace=5)
        assert all(p.wait(timeout=TIMEOUT_SECONDS) < 0 for p in (tree, carrier, scoped))
    finally:
        for process in (tree, carrier, scoped):
            process.kill()
            process.wait()
