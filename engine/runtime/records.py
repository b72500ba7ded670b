"""Records as the runtime sees them: raw input with its coordinates, encoded output with its route."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from topics.errors import Stage
from topics.names import TopicRole

__all__ = ["Handover", "Header", "Incident", "InputRecord", "Misplaced", "OutputRecord", "Stage"]

Header = tuple[str, bytes]


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One consumed record. `topic_name` is the real topic name, kept for dead-letter headers; `headers` are the
    record's Kafka headers (the runtime reads only the trace context among them)."""

    topic: TopicRole
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: datetime | None = None
    topic_name: str = ""
    headers: tuple[Header, ...] = ()


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


@dataclass(frozen=True, slots=True)
class Incident:
    """A failure the runtime isolated: one subject's engine call raised, its records were dead-lettered
    (`dead_letters` of them; none when inventory or a timer triggered it) and its state stayed as before."""

    subject: str
    stage: str
    error: BaseException
    dead_letters: int


@dataclass(frozen=True, slots=True)
class Misplaced:
    """A subject record refused because it arrived off its key's partition (its dead letter says why): the
    service counts it and names its producer (the event's CloudEvents `source`, empty for a tombstone or a
    value without one) once per topic."""

    topic_name: str
    producer: str
    expected: int
    arrived: int
