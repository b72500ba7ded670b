"""Errors of the local development broker, under the project's one error root."""

from __future__ import annotations

from topics.errors import PlacementStreamError

__all__ = ["BrokerError", "LocalBrokerError"]


class LocalBrokerError(PlacementStreamError):
    """Root of the local broker's errors: fetching Kafka, starting or reaching the broker, TLS material, ACLs."""


class BrokerError(LocalBrokerError):
    """The local broker could not be formatted, started or stopped."""
