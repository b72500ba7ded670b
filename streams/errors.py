"""Errors of the service shell, under one root."""

from __future__ import annotations

__all__ = ["ServiceError", "SettingsError", "TopicSetupError"]


class ServiceError(Exception):
    """Root of every error raised by the service shell."""


class SettingsError(ServiceError):
    """A setting is missing or invalid; the message names its source, the field and the problem."""


class TopicSetupError(ServiceError):
    """Topics could not be created or have the wrong shape (partition counts, cleanup policy)."""
