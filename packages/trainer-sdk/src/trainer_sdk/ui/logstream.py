"""A followed log as batches: whatever lines have arrived since the last batch, at once.

A reader thread pulls lines from the log's iterator (which blocks while the job is quiet) into a
buffer of about one batch and wakes the event loop when the buffer stops being empty; the answer
takes everything buffered in one go (up to about 64 KiB of text), so a finished log of 100,000
lines goes out as a few dozen events and a live one as one event per burst, not one per line.
While nothing arrives, an empty batch comes every ``quiet_seconds`` (a keep-alive that also
finds out when the client has gone). A panel that opens on the tail of a long log asks for
``skip``: the reader drops that many lines first, which costs a pass over them in the reader
thread but nothing in the buffer, on the wire or in the browser.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncGenerator, Iterator
from itertools import islice
from typing import Final

__all__ = ["batches"]

# A batch ends after about this much text, and the reader reads no further ahead: the buffer
# and each copy of a batch on its way out (JSON, event, chunk) hold about 64 KiB at a time.
_BATCH_CHARACTERS: Final = 1 << 16


async def batches(
    lines: Iterator[str], quiet_seconds: float = 15.0, skip: int = 0
) -> AsyncGenerator[list[str], None]:
    """Lists of lines until ``lines`` ends (or the caller closes this generator), the first
    ``skip`` lines left out: empty while it is quiet."""
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()
    room = threading.Condition()  # guards buffer, buffered, ended and stopped
    buffer: deque[str] = deque()
    buffered = 0  # characters in buffer
    ended = stopped = False

    def wake() -> None:
        """Tell the loop there is something to take; lock held, so never after ``stopped``."""
        if not stopped:
            loop.call_soon_threadsafe(arrived.set)

    def has_room() -> bool:
        return stopped or buffered < _BATCH_CHARACTERS

    def read() -> None:
        nonlocal buffered, ended
        try:
            for line in islice(lines, skip, None):
                with room:
                    room.wait_for(has_room)
                    if stopped:
                        return
                    buffer.append(line)
                    buffered += len(line)
                    if len(buffer) == 1:
                        wake()
        finally:
            with room:
                ended = True
                wake()

    threading.Thread(target=read, name="ui-log-reader", daemon=True).start()
    try:
        while True:
            try:
                await asyncio.wait_for(arrived.wait(), quiet_seconds)
            except asyncio.TimeoutError:
                yield []
                continue
            batch: list[str] = []
            with room:
                size = 0
                while buffer and size < _BATCH_CHARACTERS:
                    batch.append(buffer.popleft())
                    size += len(batch[-1])
                buffered -= size
                if not buffer:
                    arrived.clear()  # the reader's next line finds it empty and wakes us
                room.notify()
                done = ended and not buffer
            if batch:
                yield batch
            if done:
                return
    finally:
        with room:
            stopped = True
            room.notify()
