"""Typed errors of the engine package, under the project's root."""

from __future__ import annotations

from typing import ClassVar

from topics.errors import PlacementStreamError, Stage

__all__ = ["EngineError", "InvalidStateError", "QueueConfigError", "RoutingError"]


class EngineError(PlacementStreamError):
    """Root of every engine error. "No match" is never an error: engines return it as a result."""


class QueueConfigError(EngineError):
    """A queue configuration file cannot become active; the message names the field and the problem."""

    stage: ClassVar[str] = Stage.VALIDATE


class RoutingError(EngineError):
    """A record's key does not name a subject this service handles."""

    stage: ClassVar[str] = Stage.VALIDATE


class InvalidStateError(EngineError):
    """A changelog entry cannot be read back into engine state."""
