"""The consumed offsets of each task transaction, recorded in the task's own changelog partition.

A new owner positions a task at the group's committed offsets, but the broker applies a transaction's offset
commit to the group a moment after the transaction completes, and aiokafka cannot ask for stable offsets (the
`require_stable` fetch of KIP-447), so under load a new owner could read the offsets from before the last
commit and decide that batch again. Each transaction therefore also writes its offsets to the changelog
partition of its task under a key no subject has; the transaction makes that record visible together with the
outputs, and a task taken over starts at the later of the group's offsets and the recorded ones. That also lets
the group's offsets be committed only once per interval (`KafkaSettings.group_offsets_interval_ms`): they are
what monitoring reads, and the recorded ones are where a new owner starts. A revoke and a graceful stop bring
the group's up to the recorded ones, and an operator's reset of the group's is told from their lag by the
metadata this processor commits them with (group_offsets.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from aiokafka import TopicPartition

from streams.errors import ServiceError

__all__ = [
    "TaskOffsetsError",
    "decode_task_offsets",
    "encode_task_offsets",
    "is_task_offsets_key",
    "task_offsets_key",
]

_PREFIX = b"~task-offsets/"
"""Not the start of any subject key (`Application/`, `Placement/`, `PlacementRule/`)."""


class TaskOffsetsError(ServiceError):
    """A task offsets record that cannot be read (it is skipped, as an unreadable changelog entry is)."""


def task_offsets_key(task: int) -> bytes:
    return _PREFIX + str(task).encode()


def is_task_offsets_key(key: bytes) -> bool:
    return key.startswith(_PREFIX)


def encode_task_offsets(offsets: Mapping[TopicPartition, int]) -> bytes:
    return orjson.dumps([[tp.topic, tp.partition, offset] for tp, offset in sorted(offsets.items())])


def decode_task_offsets(value: bytes) -> dict[TopicPartition, int]:
    """Raises TaskOffsetsError when the value is not such a record."""
    try:
        items = orjson.loads(value)
        if not isinstance(items, list):
            raise TypeError(f"a list of [topic, partition, offset], not {type(items).__name__}")
        return {TopicPartition(str(t), int(p)): int(offset) for t, p, offset in items}
    except (TypeError, ValueError) as exc:
        raise TaskOffsetsError(f"unreadable task offsets record: {exc}") from exc
