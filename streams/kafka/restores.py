"""Restores in progress and the last one of each task, for an instance's /status and `placement-stream describe`:
how far a task's changelog partition has been read towards the end offset captured when its restore began."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition

__all__ = ["RestoreProgress", "TaskRestore"]


@dataclass
class TaskRestore:
    """One task's restore: its changelog read so far (next offset to read, records read) of its end offset."""

    task: int
    started_at: float
    """Wall-clock start."""
    read_to: int = 0
    end_offset: int | None = None
    records: int = 0
    finished_at: float | None = None

    def note(self, _tp: TopicPartition, read_to: int, end_offset: int, records: int) -> None:
        """`read_to_end`'s progress on the task's changelog partition."""
        self.read_to, self.end_offset = read_to, end_offset
        self.records += records

    def as_json(self) -> dict[str, Any]:
        """The restore as /status shows it."""
        ended = self.finished_at if self.finished_at is not None else time.time()
        return {
            "task": self.task,
            "startedAt": self.started_at,
            "seconds": round(ended - self.started_at, 3),
            "readTo": self.read_to,
            "endOffset": self.end_offset,
            "records": self.records,
            "done": self.finished_at is not None,
        }


class RestoreProgress:
    """The restores of one instance; written on the processor's loop, read as a whole by /status."""

    def __init__(self) -> None:
        self.running: dict[int, TaskRestore] = {}
        self.last: dict[int, TaskRestore] = {}
        """Each task's last finished restore."""

    @contextlib.contextmanager
    def restoring(self, task: int) -> Iterator[TaskRestore]:
        """Follow one task's restore while inside; the restore `note`s its reads."""
        restore = self.running[task] = TaskRestore(task, time.time())
        try:
            yield restore
        finally:
            restore.finished_at = time.time()
            self.running.pop(task, None)
            self.last[task] = restore
