"""``log_metrics``: training code records named numbers per step; the job keeps their history.

The call only appends to an in-memory buffer (about a microsecond, see
``benchmarks/bench_log_metrics.py``); a daemon thread flushes it every ``FLUSH_INTERVAL_SECONDS``
and at interpreter exit, so training never waits on I/O. Where the points go:

- local backend (``TRAINER_SDK_STATUS_FILE`` is set): appended as JSON lines to
  ``<job>/metrics/rank-<r>.jsonl``, one file per rank, kept with the job (``history``);
- in a cluster (``KUBEFLOW_TRAINER_SERVER_URL`` is set): the latest value of each metric goes
  to the TrainJob's ``status.trainerStatus.metrics`` through the progress endpoint, at most once
  per ``trainer_status.MIN_POST_INTERVAL`` seconds (with the progress and ETA last reported);
- outside a TrainJob: nowhere (the call still costs the same and drops the points).

Only rank 0 records by default (``RANK``, ``OMPI_COMM_WORLD_RANK`` or ``PMI_RANK``); other ranks
opt in with ``all_ranks=True``.
"""

from __future__ import annotations

import atexit
import json
import operator
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from trainer_sdk.training import trainer_status as status_channel

__all__ = [
    "FLUSH_INTERVAL_SECONDS",
    "METRICS_DIR_NAME",
    "FileSink",
    "MetricPoint",
    "MetricsLogger",
    "StatusSink",
    "format_entries",
    "latest_values",
    "log_metrics",
    "read_history",
]

FLUSH_INTERVAL_SECONDS: Final = 1.0
METRICS_DIR_NAME: Final = "metrics"
_RANK_ENVS: Final = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


@dataclass(frozen=True)
class MetricPoint:
    """Values of one step on one rank, at ``time`` (seconds since the epoch)."""

    step: int
    time: float
    rank: int
    values: dict[str, float] = field(default_factory=dict)


# What the training thread appends: step, time, values, and whether the status should get it
# (False for update_trainjob_status' own metrics, which it reported itself).
Entry = tuple[int, float, dict[str, float], bool]


def _number(value: float) -> str:
    """A value as JSON (NaN and infinities as Python's json writes them)."""
    return repr(value) if value - value == 0 else json.dumps(value)


def format_entries(rank: int, entries: Sequence[Entry]) -> str:
    """JSON lines of ``entries``, formatted by hand: json.dumps per point costs several times
    more, and the flush shares the training process's GIL."""
    names: dict[str, str] = {}
    lines = []
    for step, at, values, _ in entries:
        fields = []
        for name, value in values.items():
            encoded = names.get(name)
            if encoded is None:
                encoded = names[name] = json.dumps(name)
            fields.append(f"{encoded}:{_number(value)}")
        lines.append(
            f'{{"step":{step},"time":{at:.3f},"rank":{rank},"values":{{{",".join(fields)}}}}}\n'
        )
    return "".join(lines)


class Sink(Protocol):
    """Where flushed entries go."""

    def write(self, rank: int, entries: Sequence[Entry]) -> None:
        """Take everything logged since the last flush, in order."""


class FileSink:
    """Appends entries as JSON lines to ``path`` (one ``write`` per flush)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, rank: int, entries: Sequence[Entry]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as stream:
            stream.write(format_entries(rank, entries))


class StatusSink:
    """Reports the latest value of each metric to the TrainJob's status (cluster path)."""

    def __init__(self) -> None:
        self._pending: dict[str, float] = {}

    def write(self, rank: int, entries: Sequence[Entry]) -> None:
        for _, _, values, publish in entries:
            if publish:
                self._pending.update(values)
        if self._pending and status_channel.report_metrics(dict(sorted(self._pending.items()))):
            self._pending = {}


def _rank_from_env() -> int:
    for name in _RANK_ENVS:
        value = os.environ.get(name)
        if value and value.lstrip("-").isdigit():
            return int(value)
    return 0


class MetricsLogger:
    """Buffers entries on the calling thread; a daemon thread hands them to ``sinks``."""

    def __init__(
        self,
        sinks: Sequence[Sink],
        rank: int = 0,
        flush_interval: float = FLUSH_INTERVAL_SECONDS,
    ) -> None:
        if flush_interval <= 0:
            raise ValueError(f"flush_interval: expected a positive number, got {flush_interval!r}")
        self.sinks, self.rank, self.flush_interval = tuple(sinks), rank, flush_interval
        self._buffer: list[Entry] = []
        self._next_step = 0
        self._after_log = False  # the last point came from log_metrics (publish=True)
        self._flush_lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def log(
        self, metrics: Mapping[str, float], step: int | None = None, publish: bool = True
    ) -> None:
        """Record ``metrics`` at ``step`` (default: one past the last step logged here)."""
        try:
            values = dict(metrics)
        except (TypeError, ValueError):
            raise ValueError(
                f"metrics: expected a dict of name to number, got {type(metrics).__name__}"
            ) from None
        for value in values.values():
            if value.__class__ is not float and value.__class__ is not int:
                values = _as_numbers(values)
                break
        if step is None:
            # A progress report right after log_metrics belongs to the step just logged.
            step = self._next_step - 1 if self._after_log and not publish else self._next_step
        elif step.__class__ is not int:
            step = _as_step(step)
        self._next_step, self._after_log = step + 1, publish
        self._buffer.append((step, time.time(), values, publish))
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="trainer-sdk-metrics", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def _run(self) -> None:
        while not self._stopped.wait(self.flush_interval):
            self.flush()

    def flush(self) -> None:
        """Hand everything buffered so far to the sinks (any thread may call it)."""
        with self._flush_lock:
            # Swapping the list is atomic under the GIL: an append lands in the old or the new one.
            taken, self._buffer = self._buffer, []
            if taken:
                for sink in self.sinks:
                    sink.write(self.rank, taken)

    def close(self) -> None:
        """Stop the flushing thread after a last flush."""
        self._stopped.set()
        self.flush()


def _as_numbers(values: Mapping[str, object]) -> dict[str, float]:
    """``values`` with str names and float values (numpy, torch scalars); ValueError naming the
    first that is not a number."""
    converted = {}
    for name, value in values.items():
        try:
            converted[str(name)] = float(value)  # type: ignore[arg-type]  # probing
        except (TypeError, ValueError):
            raise ValueError(f"metrics[{name!r}]: expected a number, got {value!r}") from None
    return converted


def _as_step(step: object) -> int:
    """``step`` as an int (numpy and torch integers too); ValueError for anything else."""
    try:
        if isinstance(step, bool):
            raise TypeError
        return operator.index(step)  # type: ignore[arg-type]  # probing for __index__
    except TypeError:
        raise ValueError(f"step: expected an int, got {step!r}") from None


def _sinks_from_env(rank: int) -> list[Sink]:
    sinks: list[Sink] = []
    if status_file := os.environ.get(status_channel.STATUS_FILE_ENV):
        directory = Path(status_file).with_name(METRICS_DIR_NAME)
        sinks.append(FileSink(directory / f"rank-{rank}.jsonl"))
    elif os.environ.get(status_channel.SERVER_URL_ENV) and rank == 0:
        sinks.append(StatusSink())
    return sinks


_default: MetricsLogger | None = None
_default_lock = threading.Lock()


def default_logger() -> MetricsLogger:
    """This process's logger, configured from the job's environment on first use. A forked
    child (a DataLoader worker) starts its own: the parent's flushing thread is not in it."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                rank = _rank_from_env()
                _default = MetricsLogger(_sinks_from_env(rank), rank)
                os.register_at_fork(after_in_child=_forget_default)
    return _default


def _forget_default() -> None:
    global _default
    _default = None


def log_metrics(
    metrics: Mapping[str, float], step: int | None = None, *, all_ranks: bool = False
) -> None:
    """Record ``metrics`` (name to number) at ``step`` in the TrainJob's history.

    Cheap enough for every step: it never blocks on I/O. Ranks other than 0 record only with
    ``all_ranks=True``. ValueError names a value that is not a number."""
    logger = _default if _default is not None else default_logger()
    if logger.rank != 0 and not all_ranks:
        return
    logger.log(metrics, step)


def read_history(directory: Path) -> list[MetricPoint]:
    """Every point under ``directory`` (a job's ``metrics``), ordered by step, rank and time."""
    points = []
    for path in sorted(directory.glob("rank-*.jsonl")) if directory.is_dir() else []:
        with open(path) as stream:
            for line in stream:
                if not line.endswith("\n"):
                    break  # a flush still being written
                document = json.loads(line)
                points.append(
                    MetricPoint(
                        int(document["step"]),
                        float(document["time"]),
                        int(document["rank"]),
                        {str(k): float(v) for k, v in document["values"].items()},
                    )
                )
    return sorted(points, key=lambda point: (point.step, point.rank, point.time))


def latest_values(points: Iterable[MetricPoint]) -> dict[str, float]:
    """The last value of each metric in ``points`` (in their order), names sorted."""
    latest: dict[str, float] = {}
    for point in points:
        latest.update(point.values)
    return dict(sorted(latest.items()))
