"""`placement-stream repartition`: the state rebuilt into co-partitioned topics with another partition count
(platform P14; the procedure around it is in docs/operations.md).

Kafka adds partitions to a topic but moves no record, so a subject whose key now hashes elsewhere would be
decided away from its state and its last decision. As Kafka Streams' reset tool with a new application id
does, the command leaves the old topics as they are and writes new ones: every co-partitioned topic gets a
new name (the old one plus a suffix) and the new count; each subject's latest changelog entries and latest
decision are copied into the partition the new count gives it, and the new changelog partitions carry the
count's marker. Subject records not processed yet (those on partitions added while a processor ran
included) are copied into the new subject topics, a subject's records on the partition the state's count gave
it before those on any other, which is the order a producer wrote them in when the count changed under it. The
command refuses while a processor is in the group; producers must be stopped, or what they write to the old
topics meanwhile is not copied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from engine.errors import RoutingError
from engine.runtime.routing import split_changelog_key
from streams.errors import ServiceError
from streams.kafka.access import topic_operations
from streams.kafka.admin import ensure_topics
from streams.kafka.clients import admin_client, loose_producer
from streams.kafka.retry import kafka_retrying
from streams.kafka.tables import new_reader, read_to_end
from streams.kafka.task_offsets import TaskOffsetsError, decode_task_offsets, is_task_offsets_key
from streams.kafka.tasks import partition_of
from streams.kafka.topology import MARKER_VALUE, is_partitions_marker, partitions_marker, recorded_counts
from streams.settings import Settings, TopicNames
from topics.names import TOPIC_SPECS, TopicRole

__all__ = [
    "Copied",
    "RepartitionError",
    "moved_names",
    "plan_copy",
    "plan_unprocessed",
    "repartition",
    "settings_lines",
]


CO_PARTITIONED = [role for role, spec in TOPIC_SPECS.items() if spec.co_partitioned]
_SUBJECT_ROLES = (TopicRole.SUBMISSIONS, TopicRole.ADVISOR_RECOMMENDATIONS)
_UNKNOWN_TOPIC = 3


class RepartitionError(ServiceError):
    """The state cannot be moved now; the message says what to do first."""


@dataclass(frozen=True, slots=True)
class Copied:
    """One record as it goes into the new topic."""

    topic: str
    partition: int
    key: bytes
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def moved_names(names: TopicNames, suffix: str) -> TopicNames:
    """The co-partitioned topics renamed with `suffix`; the others stay."""
    return names.model_copy(update={role.value.replace("-", "_"): names.name(role) + suffix for role in CO_PARTITIONED})


def plan_copy(records: Iterable[ConsumerRecord[bytes, bytes]], count: int, topic: str) -> list[Copied]:
    """The latest record of each key (in the order of those latest records, so a subject's entries keep theirs),
    in the partition `count` gives its subject in `topic`; deleted keys (tombstones) and keys of no subject (task
    offsets, markers) are left behind."""
    latest: dict[bytes, ConsumerRecord[bytes, bytes]] = {}
    for record in records:
        if record.key is None or record.key.startswith(b"~"):
            continue
        latest.pop(record.key, None)
        latest[record.key] = record
    return [_copied(record, count, topic) for record in latest.values() if record.value is not None]


def plan_unprocessed(
    records: Iterable[ConsumerRecord[bytes, bytes]], state_count: int, count: int, topics: Mapping[str, str]
) -> list[Copied]:
    """Unprocessed subject records in the order the new topics must hold them: per subject, those on the
    partition `state_count` gives it first, then those a producer sent elsewhere once the count had changed;
    each in the partition `count` gives its subject, in the topic `topics` maps its own to."""
    keyed = [r for r in records if r.key is not None]
    ranked = sorted(
        keyed,
        key=lambda r: (r.partition != partition_of(_subject(r.key), state_count), r.partition, r.offset),
    )
    return [_copied(record, count, topics[record.topic]) for record in ranked]


def _copied(record: ConsumerRecord[bytes, bytes], count: int, topic: str) -> Copied:
    key: bytes = record.key
    return Copied(
        topic, partition_of(_subject(key), count), key, record.value, tuple(record.headers or ()), record.timestamp
    )


def _subject(key: bytes) -> str:
    text = key.decode(errors="replace")
    try:
        return split_changelog_key(text)[0]
    except RoutingError:
        return text


async def repartition(settings: Settings, count: int, suffix: str, say: Callable[[str], None]) -> TopicNames:
    """Copy the state into new topics of `count` partitions; returns their names."""
    names, target = settings.topics, moved_names(settings.topics, suffix)
    admin = admin_client(settings.kafka)
    await admin.start()
    reader = new_reader(settings.kafka, f"{settings.kafka.client_id}-repartition")
    await reader.start()
    try:
        await _refuse_unless_idle(settings, admin)
        await _refuse_existing(admin, [target.name(role) for role in CO_PARTITIONED])
        changelog, partitions = await _read_all(reader, admin, names.changelog)
        unprocessed = await _unprocessed(settings, admin, reader, changelog)
        decisions, _ = await _read_all(reader, admin, names.decisions)
        moved = settings.model_copy(
            update={"topics": target, "kafka": settings.kafka.model_copy(update={"task_partitions": count})}
        )
        await ensure_topics(moved, admin, CO_PARTITIONED)
    finally:
        await reader.stop()
        await admin.close()
    entries, decided = plan_copy(changelog, count, target.changelog), plan_copy(decisions, count, target.decisions)
    subject_topics = {names.name(role): target.name(role) for role in _SUBJECT_ROLES}
    pending = plan_unprocessed(unprocessed, _state_count(changelog, partitions), count, subject_topics)
    await _write(settings, target.changelog, count, [*entries, *decided, *pending])
    say(
        f"copied {len(entries)} changelog entries, {len(decided)} decisions and {len(pending)} unprocessed "
        f"subject records into {count} partitions"
    )
    return target


def _state_count(changelog: Sequence[ConsumerRecord[bytes, bytes]], partitions: int) -> int:
    """The count the state was built with: its markers', else the changelog's own partition count."""
    counts = recorded_counts((r.partition, r.key) for r in changelog if r.key and is_partitions_marker(r.key))
    recorded = {c for found in counts.values() for c in found}
    if len(recorded) == 1:
        return recorded.pop()
    return partitions


async def _refuse_unless_idle(settings: Settings, admin: AIOKafkaAdminClient) -> None:
    group = settings.kafka.group_id
    async for attempt in kafka_retrying():  # the coordinator is not known yet on a new cluster
        with attempt:
            response = (await admin.describe_consumer_groups([group]))[0]
    members = response.groups[0][5]
    if members:
        raise RepartitionError(f"consumer group {group} has {len(members)} member(s): stop every processor first")


async def _refuse_existing(admin: AIOKafkaAdminClient, names: Sequence[str]) -> None:
    answers = await topic_operations(admin, list(names))
    existing = sorted(name for name, (code, _) in answers.items() if code != _UNKNOWN_TOPIC)
    if existing:
        raise RepartitionError(f"topics {', '.join(existing)} exist already: choose another --suffix")


async def _read_all(
    reader: AIOKafkaConsumer, admin: AIOKafkaAdminClient, topic: str
) -> tuple[list[ConsumerRecord[bytes, bytes]], int]:
    """Every record of `topic` (read_committed), and its partition count."""
    described = await admin.describe_topics([topic])
    code = described[0].get("error_code", 0)
    if code:
        raise RepartitionError(
            f"topic {topic} does not exist" if code == _UNKNOWN_TOPIC else f"topic {topic}: error {code}"
        )
    partitions = [TopicPartition(topic, p["partition"]) for p in described[0]["partitions"]]
    reader.assign(partitions)
    records: list[ConsumerRecord[bytes, bytes]] = []
    await read_to_end(reader, partitions, records.extend, timeout=600.0)
    return records, len(partitions)


async def _unprocessed(
    settings: Settings,
    admin: AIOKafkaAdminClient,
    reader: AIOKafkaConsumer,
    changelog: Sequence[ConsumerRecord[bytes, bytes]],
) -> list[ConsumerRecord[bytes, bytes]]:
    """The subject records not processed yet: at or past the later of the group's offset and the one the
    task's last transaction recorded (task_offsets.py)."""
    processed: dict[TopicPartition, int] = {}
    for record in changelog:
        if record.key is not None and record.value is not None and is_task_offsets_key(record.key):
            try:
                processed.update(decode_task_offsets(record.value))
            except TaskOffsetsError:
                continue
    for tp, meta in (await admin.list_consumer_group_offsets(settings.kafka.group_id)).items():
        processed[tp] = max(processed.get(tp, 0), meta.offset)
    subject_topics = [settings.topics.submissions, settings.topics.advisor_recommendations]
    described = await admin.describe_topics(subject_topics)
    partitions = [TopicPartition(d["topic"], p["partition"]) for d in described for p in d["partitions"]]
    reader.assign(partitions)
    for tp in partitions:
        reader.seek(tp, processed.get(tp, 0))  # below the log start: from the start (auto_offset_reset)
    records: list[ConsumerRecord[bytes, bytes]] = []
    await read_to_end(reader, partitions, records.extend, from_beginning=False, timeout=600.0)
    return records


async def _write(settings: Settings, changelog: str, count: int, copied: list[Copied]) -> None:
    """The markers first (the head of every new changelog partition), then the copies in their order."""
    producer = loose_producer(settings.kafka)
    await producer.start()
    try:
        sent = [
            await producer.send(changelog, MARKER_VALUE, key=partitions_marker(count), partition=p)
            for p in range(count)
        ]
        for c in copied:
            sent.append(
                await producer.send(
                    c.topic,
                    c.value,
                    key=c.key,
                    partition=c.partition,
                    headers=list(c.headers),
                    timestamp_ms=c.timestamp,
                )
            )
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


def settings_lines(target: TopicNames, count: int) -> list[str]:
    """The environment a processor needs to run on the new topics."""
    lines = [f"PLACEMENT_KAFKA__TASK_PARTITIONS={count}"]
    for role in CO_PARTITIONED:
        lines.append(f"PLACEMENT_TOPICS__{role.value.replace('-', '_').upper()}={target.name(role)}")
    return lines
