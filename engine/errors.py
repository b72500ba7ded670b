"""Typed errors of the engine package, under the project's root."""

from __future__ import annotations

from types import TracebackType
from typing import ClassVar

from topics.errors import PlacementStreamError, Stage

__all__ = [
    "EngineError",
    "InvalidStateError",
    "MisplacedRecordError",
    "QueueConfigError",
    "RoutingError",
    "UnreadableState",
]


class EngineError(PlacementStreamError):
    """Root of every engine error. "No match" is never an error: engines return it as a result."""


class QueueConfigError(EngineError):
    """A queue configuration file cannot become active; the message names the field and the problem."""

    stage: ClassVar[str] = Stage.VALIDATE


class RoutingError(EngineError):
    """A record's key does not name a subject this service handles."""

    stage: ClassVar[str] = Stage.VALIDATE


class MisplacedRecordError(RoutingError):
    """A subject record arrived on a partition other than the one its key hashes to, so the task reading it does
    not own its subject (its producer does not partition keys by murmur2)."""

    def __init__(self, message: str, *, expected: int, arrived: int) -> None:
        super().__init__(message)
        self.expected = expected
        self.arrived = arrived


class InvalidStateError(EngineError):
    """A changelog entry cannot be read back into engine state."""


class UnreadableState:
    """A context manager that turns the errors of reading a changelog entry (`kinds`) into InvalidStateError
    prefixed with `what`, so the reader names the entry, skips it and goes on.

    A class rather than a generator context manager: a restore enters one or two per entry, hundreds of
    thousands, and a generator's set-up was a twentieth of it."""

    __slots__ = ("_kinds", "_what")

    def __init__(self, what: str, kinds: tuple[type[Exception], ...]) -> None:
        self._what, self._kinds = what, kinds

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        if isinstance(exc, self._kinds):
            raise InvalidStateError(f"{self._what}: {exc}") from exc
