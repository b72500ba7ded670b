"""Typed errors of the engine package, under one root."""

from __future__ import annotations

__all__ = ["EngineError", "InvalidStateError", "QueueConfigError", "RoutingError"]


class EngineError(Exception):
    """Root of every engine error. "No match" is never an error: engines return it as a result."""


class QueueConfigError(EngineError):
    """A queue configuration file cannot become active; the message names the field and the problem."""


class RoutingError(EngineError):
    """A record's key does not name a subject this service handles."""


class InvalidStateError(EngineError):
    """A changelog entry cannot be read back into engine state."""
