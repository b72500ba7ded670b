"""Keeping aiokafka's retried start-up errors out of a person's terminal.

While a broker or a just-created topic is starting, aiokafka logs conditions it retries by itself (no partition
leader elected yet, the group coordinator still loading, a topic not in the metadata yet) at ERROR or WARNING.
They are expected and go away on their own; shown as errors they send a new user looking for a problem.
"""

from __future__ import annotations

import logging

__all__ = ["TransientKafkaErrors"]

_RETRIED = (
    "NotLeaderForPartitionError",
    "LeaderNotAvailableError",
    "GroupCoordinatorNotAvailableError",
    "NotCoordinatorForGroupError",
    "CoordinatorLoadInProgressError",
    "UnknownTopicOrPartitionError",
    "not found in cluster metadata",
)


class TransientKafkaErrors(logging.Filter):
    """A handler filter: aiokafka records about retried conditions become DEBUG, shown only when DEBUG is on."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Demote (and, unless the root logger shows DEBUG, drop) aiokafka's retried-condition records."""
        if not record.name.startswith("aiokafka") or record.levelno <= logging.DEBUG:
            return True
        message = record.getMessage()
        if not any(marker in message for marker in _RETRIED):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)
