"""A followed log as batches: whatever lines have arrived since the last batch, at once.

A reader thread pulls lines from the log's iterator (which blocks while the job is quiet) into a
bounded queue; the answering thread takes everything queued in one go, so a finished log of
100,000 lines goes out as a few large events and a live one as one event per burst, not one per
line. While nothing arrives, an empty batch comes every ``quiet_seconds`` (a keep-alive that
also finds out when the client has gone). A panel that opens on the tail of a long log asks for
``skip``: the reader drops that many lines first, which costs a pass over them in the reader
thread but nothing in the queue, on the wire or in the browser.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from itertools import islice
from typing import Final

__all__ = ["batches"]

_QUEUED_LINES: Final = 500  # lines read ahead at most: the reader waits for the writer
_BATCH_CHARACTERS: Final = 1 << 18  # a batch ends after about this much text
_END: Final = object()


def batches(
    lines: Iterator[str], stopped: threading.Event, quiet_seconds: float = 15.0, skip: int = 0
) -> Iterator[list[str]]:
    """Lists of lines until ``lines`` ends (or ``stopped`` is set), the first ``skip`` lines
    left out: empty while it is quiet."""
    pending: queue.Queue[object] = queue.Queue(maxsize=_QUEUED_LINES)

    def read() -> None:
        try:
            for line in islice(lines, skip, None):
                if not offer(line):
                    return
        finally:
            offer(_END)

    def offer(item: object) -> bool:
        """Queue ``item`` once there is room; False when the writer has stopped."""
        while not stopped.is_set():
            try:
                pending.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue  # the client reads slowly: wait for room
        return False

    threading.Thread(target=read, name="ui-log-reader", daemon=True).start()
    while not stopped.is_set():
        try:
            item = pending.get(timeout=quiet_seconds)
        except queue.Empty:
            yield []
            continue
        batch: list[str] = []
        size = 0
        while item is not _END:
            batch.append(str(item))
            size += len(batch[-1])
            if size >= _BATCH_CHARACTERS:
                break
            try:
                item = pending.get_nowait()
            except queue.Empty:
                break
        if batch:
            yield batch
        if item is _END:
            return
