"""Pages of the job list from the index, without rebuilding and sorting every row per request.

Each job's row is built once per change of that job (``views.job_row``, kept by the identity of
its ``IndexedJob``); each selection (search, status, sort, order) is filtered and sorted once per
``JobIndex.version`` and kept (the last ``SELECTIONS_KEPT``); a request slices its page and
builds those rows again with the current clock (age, a running job's duration). Sorting by age is
sorting by creation time the other way round; sorting by duration uses each row as last built.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from trainer_sdk.client import TrainerClient
from trainer_sdk.ui import views
from trainer_sdk.ui.jobindex import IndexedJob, JobIndex

__all__ = ["SELECTIONS_KEPT", "JobList", "Selection"]

SELECTIONS_KEPT: Final = 16
Selection = tuple[str, str, str, bool]  # query, status, sort, descending


class JobList:
    """The job list of ``client``, thread-safe."""

    def __init__(self, client: TrainerClient) -> None:
        self.index = JobIndex(client)
        self._lock = threading.Lock()
        self._version = -1
        self._rows: dict[str, tuple[IndexedJob, dict[str, Any]]] = {}
        self._selections: OrderedDict[Selection, list[IndexedJob]] = OrderedDict()

    def page(
        self, selection: Selection, offset: int, limit: int | None, now: datetime
    ) -> tuple[list[Mapping[str, Any]], int]:
        """The rows ``offset`` to ``offset + limit`` (all when None) of ``selection``, and how many
        match in all."""
        query, status, sort, descending = selection
        if sort == "age":
            selection = (query, status, "created", not descending)
        with self._lock:
            indexed = self.index.jobs()
            if self.index.version != self._version:
                self._version = self.index.version
                self._selections.clear()
                self._rows = {item.job.name: self._row(item, now) for item in indexed}
            chosen = self._selections.get(selection)
            if chosen is None:
                chosen = self._select(selection)
                self._selections[selection] = chosen
                if len(self._selections) > SELECTIONS_KEPT:
                    self._selections.popitem(last=False)
            self._selections.move_to_end(selection)
        shown = chosen[offset:] if limit is None else chosen[offset : offset + limit]
        return [views.job_row(item, now) for item in shown], len(chosen)

    def refresh(self) -> list[IndexedJob]:
        """Every job, oldest first, the index brought up to date."""
        with self._lock:
            return self.index.jobs()

    def _row(self, item: IndexedJob, now: datetime) -> tuple[IndexedJob, dict[str, Any]]:
        kept = self._rows.get(item.job.name)
        return kept if kept is not None and kept[0] is item else (item, views.job_row(item, now))

    def _select(self, selection: Selection) -> list[IndexedJob]:
        query, status, sort, descending = selection
        rows = views.select_rows(
            [row for _, row in self._rows.values()], query, status, sort, descending=descending
        )
        return [self._rows[row["name"]][0] for row in rows]
