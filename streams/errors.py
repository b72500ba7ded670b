"""Errors of the service shell, under one root; a bad setting is connection/'s `SettingsError`, which every
program reading the settings shares."""

from __future__ import annotations

from connection.errors import SettingsError
from topics.errors import PlacementStreamError

__all__ = ["PoisonRecordError", "ServiceError", "SettingsError", "TopicRefusal", "TopicSetupError"]


class ServiceError(PlacementStreamError):
    """Root of every error raised by the service shell."""


class TopicSetupError(ServiceError):
    """Topics could not be created or have the wrong shape (partition counts, cleanup policy)."""


class TopicRefusal(TopicSetupError):
    """The topics are not as the state needs them (a partition count other than the state's, a lost changelog,
    a policy that drops state): the processor refuses to run its tasks; the message names the fix."""


class PoisonRecordError(ServiceError):
    """A record kept aborting its task's transaction and was dead-lettered instead of tried again."""
