"""``update_trainjob_status``: training code reports progress, ETA and metrics to its TrainJob.

Where a report goes, and how often, is ``trainer_status``'s (the job's ``progress.json`` locally,
the controller's status endpoint in a cluster, throttled so that calling it every step is safe; a
report of 100 % is never dropped). Outside a TrainJob it does nothing and returns False.

Numeric metrics of every report also enter the job's metric history (``training.metrics``),
as ``log_metrics`` points do; ``report_metrics`` is how ``log_metrics`` reaches a cluster job's
status, carrying the progress and ETA this process last reported. This module imports
``metrics``, which does not import it back (both report through ``trainer_status``).
"""

from __future__ import annotations

from typing import Final

from trainer_sdk.training import metrics as history
from trainer_sdk.training import trainer_status as status_channel

__all__ = ["STATUS_FILE_ENV", "report_metrics", "update_trainjob_status"]

# Where reports go (``trainer_status``), named here too for the code that sets them.
STATUS_FILE_ENV: Final = status_channel.STATUS_FILE_ENV
SERVER_URL_ENV: Final = status_channel.SERVER_URL_ENV
SERVER_TOKEN_ENV: Final = status_channel.SERVER_TOKEN_ENV
SERVER_CA_ENV: Final = status_channel.SERVER_CA_ENV
MIN_POST_INTERVAL: Final = status_channel.MIN_POST_INTERVAL
report_metrics = status_channel.report_metrics


def update_trainjob_status(
    progress_percent: int | None = None,
    estimated_remaining_seconds: int | None = None,
    metrics: dict[str, float | int | str] | None = None,
) -> bool:
    """Report progress (0-100), ETA in seconds and metrics; True when the report reached the job.

    False when there is no job, the endpoint could not take it, or the report came sooner than the
    throttle allows (each report carries the whole state, so the next one catches up).
    """
    status = status_channel.trainer_status(progress_percent, estimated_remaining_seconds, metrics)
    _record_history(metrics)
    return status_channel.report(status)


def _record_history(metrics: dict[str, float | int | str] | None) -> None:
    """The numeric metrics of a report, as one point of the job's history (rank rule of
    ``log_metrics``); not posted again by the metrics logger."""
    numbers = {
        name: value
        for name, value in (metrics or {}).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    if not numbers:
        return
    logger = history.default_logger()
    if logger.rank == 0:
        logger.log(numbers, publish=False)
