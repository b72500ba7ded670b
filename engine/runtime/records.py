"""Records as the runtime sees them: raw input with its coordinates, encoded output with its route."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from topics.names import TopicRole

__all__ = ["Handover", "Header", "InputRecord", "OutputRecord", "Stage"]

Header = tuple[str, bytes]


class Stage:
    """Where a dead-lettered record failed (the `__connect.errors.stage` header)."""

    DECODE = "DECODE"
    VALIDATE = "VALIDATE"
    PROCESS = "PROCESS"


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One consumed record. `topic_name` is the real topic name, kept for dead-letter headers."""

    topic: TopicRole
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: datetime | None = None
    topic_name: str = ""


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One record to publish.

    Routing: `subject` names the task (the subject key, whose partition owns it); `partition` pins the task
    of an input record (dead letters of subject input); neither means "not bound to any task".
    """

    topic: TopicRole
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    subject: str | None = None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class Handover:
    """Outputs handed over while a batch is still being decided.

    `finished` names a task none of whose later outputs in this batch will come: its transaction can commit
    while the other tasks are still being decided, so a deployer sees it that much sooner.
    """

    records: list[OutputRecord]
    finished: int | None = None
