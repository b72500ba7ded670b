"""Queue placement events: submissions in, placements and rejections out."""

from __future__ import annotations

from pydantic import Field

from topics.base import EventData

__all__ = [
    "ApplicationCompleted",
    "ApplicationPlaced",
    "ApplicationRejected",
    "ApplicationSubmitted",
    "QueueConfigRejected",
]


class ApplicationSubmitted(EventData):
    """A YuniKorn application asking for a queue."""

    application_id: str = Field(min_length=1)
    partition: str = "default"
    user: str = ""
    groups: list[str] = Field(default_factory=list)
    queue: str = ""
    tags: dict[str, str] = Field(default_factory=dict)


class ApplicationCompleted(EventData):
    """An application left its queue; empty dynamic queues are cleaned up."""

    application_id: str = Field(min_length=1)
    partition: str = "default"


class ApplicationPlaced(EventData):
    """The application was accepted into a fully qualified leaf queue."""

    application_id: str
    partition: str
    queue: str
    rule: str
    created: bool


class ApplicationRejected(EventData):
    """The application was not accepted; `reason` is meant for a person."""

    application_id: str
    partition: str
    reason: str


class QueueConfigRejected(EventData):
    """A reloaded queue configuration was broken and ignored; the previous one stays active."""

    path: str
    error: str
    sha256: str
    partition: str | None = None
