"""What the local executor observes beyond its JobSet's status, and how ``build`` reads it.

A local job's TrainJob status has one writer: the runtime framework's ``build``, which the
supervisor calls after each change (its guardian, when the supervisor died first), as the
operator does in a cluster. What a cluster's JobSet status cannot say is recorded as a *fact*
in ``state.json`` and fed into ``build`` through one status plugin of this backend's
(``LocalFacts``), which turns each fact into the condition it means:

- ``Failed``: the run ended outside its JobSet: it was stopped (``Stopped``), its supervisor or
  guardian died (``SupervisorLost``), the supervisor failed (``SupervisorFailed``), the job's
  packages could not be installed (``PackageInstallFailed``), its data cache did not start
  (``DataCacheFailed``), or the job root's file system is full (``DiskFull``);
- ``Suspended``: the run was ended to suspend the job (``Suspended``) or by a preemption
  (``Preempted``); ``resume`` clears it, and ``build`` then says ``Resumed``. The executor's
  JobSet says the same when the runner ended it so (its ``Suspended`` condition: a rank ended by
  SIGTERM with no restart left, or ``spec.suspend`` at the start), which the plugin reads too.

Nothing else writes a condition: a reader that finds a job nobody runs any more (its lock is
free and it never finished) derives the status the same way, with the fact ``SupervisorLost``,
without writing it. When the job root's file system is full, ``state.json`` cannot be written:
the fact (``DiskFull``) then goes in place into ``end-note``, a file allocated at submit, where
that reader finds it.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the API models: imported where a status is derived, never by readers
    from trainer_api import TrainJob, TrainJobStatus
    from trainer_runtime import Admission, Observed

__all__ = [
    "DISK_FULL",
    "FAILED",
    "PREEMPTED",
    "STOPPED",
    "SUPERVISOR_LOST",
    "SUSPENDED",
    "LocalFacts",
    "admit_stored",
    "derive_status",
    "disk_full",
    "disk_full_message",
    "read_note",
    "record",
    "reserve_note",
    "write_note",
]

FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
STOPPED: Final = "Stopped"
PREEMPTED: Final = "Preempted"
SUPERVISOR_LOST: Final = "SupervisorLost"
DISK_FULL: Final = "DiskFull"
_KINDS: Final = (FAILED, SUSPENDED)
NOTE_BYTES: Final = 4096
_FULL: Final = (errno.ENOSPC, errno.EDQUOT)


def record(state: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """Record in ``state`` (a ``state.json`` document) that the run ended for ``reason``:
    ``kind`` Failed (the run ended outside its JobSet) or Suspended (suspended or preempted).
    A run that ended Failed leaves no pod running or pending: they were ended with it."""
    if kind not in _KINDS:
        raise ValueError(f"kind: expected one of {', '.join(_KINDS)}, got {kind!r}")
    state.setdefault("facts", {})[kind] = {
        "reason": reason,
        "message": message,
        "time": datetime.now(timezone.utc).isoformat(),
    }
    if kind == FAILED:
        for pod in state.get("pods") or []:
            if pod.get("phase") in ("Running", "Pending"):
                pod["phase"] = "Failed"


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a full file system or quota."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _FULL:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def reserve_note(path: Path) -> None:
    """Allocate ``path`` (``NOTE_BYTES``, blank) so that ``write_note`` needs no new block."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, b" " * NOTE_BYTES)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_note(path: Path, reason: str, message: str) -> None:
    """Write a Failed fact into the blocks ``reserve_note`` allocated (in place: a full disk
    allows it), cut to fit."""
    note = json.dumps({"reason": reason, "message": message[: NOTE_BYTES // 2]}).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.pwrite(fd, note.ljust(NOTE_BYTES)[:NOTE_BYTES], 0)
    finally:
        os.close(fd)


def read_note(path: Path) -> tuple[str, str] | None:
    """The fact ``write_note`` left (reason, message), or None."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    if not text:
        return None
    note = json.loads(text)
    return str(note["reason"]), str(note["message"])


def disk_full_message(path: Path) -> str:
    """What the user must know when the job root's file system filled."""
    return (
        f"the file system of {path} is full: the job could not record its state; free space, "
        "then submit or resume the job again"
    )


class LocalFacts:
    """The status plugin of the local executor's facts (appended to the runtime's plugins)."""

    name = "LocalFacts"

    def __init__(self, facts: Mapping[str, Mapping[str, Any]]) -> None:
        self.facts = facts

    def derive_status(
        self, job: TrainJob, observed: Observed, now: datetime
    ) -> TrainJobStatus | None:
        """A True condition per fact, of its kind, with its reason, message and time; the
        JobSet's Suspended condition as the TrainJob's, unless a fact says otherwise."""
        from trainer_api import Condition, TrainJobStatus

        found = dict(self.facts)
        jobset_status = (observed.jobset_doc() or {}).get("status") or {}
        for condition in jobset_status.get("conditions") or ():
            if condition.get("type") == SUSPENDED and condition.get("status") == "True":
                found.setdefault(SUSPENDED, {**condition, "time": condition["lastTransitionTime"]})
        conditions = [
            Condition(
                type=kind,
                status="True",
                reason=str(fact["reason"]),
                message=str(fact["message"]),
                last_transition_time=datetime.fromisoformat(str(fact["time"])),
            )
            for kind in _KINDS
            if (fact := found.get(kind)) is not None
        ]
        return TrainJobStatus(conditions=conditions) if conditions else None


def admit_stored(
    trainjob: Mapping[str, Any], runtime: Mapping[str, Any], status: Mapping[str, Any] | None
) -> Admission:
    """The job as its submit stored it (``trainjob.json``, defaulted), with ``status`` (the
    TrainJob status last written), admitted against the runtime it was built from
    (``runtime.json``): once per process that derives its status."""
    import trainer_api
    import trainer_runtime

    admission = trainer_runtime.admit(
        trainer_runtime.parse_trainjob(trainjob), trainer_runtime.parse_runtime(runtime)
    )
    return admission.with_status(trainer_api.TrainJobStatus.model_validate(status or {}))


def derive_status(
    admission: Admission, jobset: Mapping[str, Any], state: Mapping[str, Any], now: datetime
) -> TrainJobStatus | None:
    """The TrainJob status ``build`` derives for the admitted job (with its status as last
    written) from its JobSet (``jobset``, its status from ``state``), owned objects and facts;
    None when it is unchanged."""
    import trainer_runtime

    observed = trainer_runtime.Observed(
        jobset={**jobset, "status": state.get("jobset") or {}},
        objects=tuple(state.get("objects") or ()),
    )
    plugins = (*trainer_runtime.PLUGINS, LocalFacts(state.get("facts") or {}))
    plan = trainer_runtime.build(admission, observed, now, plugins=plugins)
    return plan.status
