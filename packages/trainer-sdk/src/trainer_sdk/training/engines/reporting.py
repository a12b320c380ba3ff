"""What a fine-tuning rank reports each step, whatever the engine: loss, learning rate and
tokens/s through ``log_metrics`` (the UI's curves), progress and ETA through
``update_trainjob_status`` (``trainer get``). Rank 0 reports; other ranks' calls are dropped by
``log_metrics``'s rank rule."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from trainer_sdk.training.metrics import log_metrics
from trainer_sdk.training.progress import update_trainjob_status

__all__ = ["StepReporter"]


class StepReporter:
    """Turns an engine's per-step values into the platform's metrics and progress.

    ``total_tokens`` (tokens seen so far, as engines count them) gives tokens/s between two
    reports; the first report counts from the reporter's creation (or ``start``)."""

    def __init__(self, total_steps: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total_steps = total_steps
        self._clock = clock
        self._last_time = clock()
        self._last_tokens: float | None = None
        self._first_step: int | None = None
        self._started = self._last_time

    def start(self, step: int, total_tokens: float | None = None) -> None:
        """Training starts (or resumes) at ``step`` with ``total_tokens`` already seen."""
        self._last_time = self._started = self._clock()
        self._last_tokens = total_tokens
        self._first_step = step

    def report(self, step: int, values: Mapping[str, float], total_tokens: float | None) -> None:
        """Step ``step`` ended with ``values`` (loss, learning_rate, ...)."""
        now = self._clock()
        metrics = dict(values)
        if total_tokens is not None and self._last_tokens is not None and now > self._last_time:
            metrics["tokens_per_second"] = (total_tokens - self._last_tokens) / (
                now - self._last_time
            )
        if total_tokens is not None:
            self._last_tokens = total_tokens
        self._last_time = now
        log_metrics(metrics, step=step)
        first = self._first_step if self._first_step is not None else 0
        done = max(step - first, 1)
        remaining = max(self.total_steps - step, 0)
        eta = round((now - self._started) / done * remaining)
        percent = min(100, round(100 * step / self.total_steps)) if self.total_steps else None
        update_trainjob_status(percent, eta)
