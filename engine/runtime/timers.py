"""The subjects' pending timers: one instant per subject, earliest first.

A heap with lazy deletion: re-arming a subject pushes a new entry and leaves the old one, which is skipped when
it surfaces because it no longer matches the subject's instant.
"""

from __future__ import annotations

import heapq
from datetime import datetime

__all__ = ["TimerQueue"]


class TimerQueue:
    """When each subject's next timer is due."""

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, str]] = []
        self._due: dict[str, datetime] = {}

    def arm(self, key: str, due: datetime | None) -> None:
        """Set (or with None clear) a subject's next instant."""
        if due is None:
            self._due.pop(key, None)
        elif self._due.get(key) != due:
            self._due[key] = due
            heapq.heappush(self._heap, (due, key))

    def disarm_if_due(self, key: str, now: datetime) -> None:
        """Clear a subject's timer when it is due at or before `now`."""
        due = self._due.get(key)
        if due is not None and due <= now:
            del self._due[key]

    def next(self) -> datetime | None:
        """The earliest pending instant, if any."""
        while self._heap:
            due, key = self._heap[0]
            if self._due.get(key) == due:
                return due
            heapq.heappop(self._heap)
        return None

    def pop_due(self, now: datetime) -> tuple[datetime, str] | None:
        """The earliest timer due at or before `now`, removed; None when none is due."""
        due = self.next()
        if due is None or due > now:
            return None
        key = heapq.heappop(self._heap)[1]
        del self._due[key]
        return due, key
