"""The group's committed offsets: this processor's commits are marked, so an operator's reset is told apart.

The group's offsets trail a running task (they are committed once per interval, task_offsets.py), so a group
offset below the one the task's last transaction recorded is normally just behind, and a new owner starts at the
recorded one. An operator who resets the offsets with Kafka's own tools (`kafka-consumer-groups --reset-offsets`,
the admin client's alterConsumerGroupOffsets) also leaves them below, and wants them read from there. Every
commit this processor makes to the group carries `GROUP_METADATA` as its metadata, which those tools write empty;
release 0.1.0 committed with empty metadata too, but each of its group commits is a position one of its task
offsets records holds, and its records lack the header this version's carry (`WRITER_HEADER`). So a group offset
is an operator's reset when its metadata is not ours, it differs from the task's last recorded offset, and no
record of 0.1.0 read in the restore holds it (platform P8).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from connection.protocol import committed_offsets

__all__ = [
    "GROUP_METADATA",
    "WRITER_HEADER",
    "Committed",
    "StartPosition",
    "fetch_committed",
    "marked",
    "start_position",
    "written_by_this_version",
]

GROUP_METADATA = "placement-stream"
"""The metadata of every offset this processor commits to the group (in a transaction or outside one)."""

WRITER_HEADER = ("placement.group-metadata", GROUP_METADATA.encode())
"""The header of each task offsets record this version writes: its task's group offsets carry that metadata.
0.1.0 reads only the record's value, whose format is unchanged."""


@dataclass(frozen=True)
class Committed:
    """One partition's committed offset in the group, with the metadata it was committed with."""

    offset: int
    metadata: str


@dataclass(frozen=True)
class StartPosition:
    """Where a task taken over starts reading one subject partition."""

    offset: int | None
    """None: nothing is committed or recorded, read from the log start."""
    reset: bool = False
    """The group's offset was reset by someone else (an operator) and is honoured."""
    group_behind: bool = False
    """The group's offset trails `offset`, which a committed transaction covers: bring the group up to date."""


def start_position(group: Committed | None, recorded: int | None, legacy: Collection[int] = ()) -> StartPosition:
    """Where to start, from the group's committed offset, the offset the task's last transaction recorded, and
    the offsets that task offsets records of 0.1.0 hold (its group commits, which carry no metadata)."""
    if group is None:
        return StartPosition(recorded, group_behind=recorded is not None)
    if recorded is None or group.offset == recorded:
        return StartPosition(group.offset)
    if group.metadata == GROUP_METADATA or group.offset in legacy:
        at = max(group.offset, recorded)
        return StartPosition(at, group_behind=at > group.offset)
    return StartPosition(group.offset, reset=True)


def marked(offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, tuple[int, str]]:
    """Offsets to commit to the group, each with this processor's metadata."""
    return {tp: (offset, GROUP_METADATA) for tp, offset in offsets.items()}


def written_by_this_version(headers: Iterable[tuple[str, bytes]] | None) -> bool:
    """Whether a task offsets record carries `WRITER_HEADER` (0.1.0's carry no header)."""
    return any(header == WRITER_HEADER for header in headers or ())


async def fetch_committed(
    consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, Committed]:
    """The group's committed offsets of `partitions` with their metadata, in one request (absent: none committed).
    `AIOKafkaConsumer.committed` drops the metadata, so its coordinator is asked directly."""
    fetched = await committed_offsets(consumer, partitions)
    return {
        tp: Committed(int(meta.offset), str(meta.metadata or "")) for tp, meta in fetched.items() if meta.offset >= 0
    }
