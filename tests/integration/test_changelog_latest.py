"""A changelog is restored from each key's last entry: the versions before it, which the log cleaner leaves in
the active segment, are read past, not decoded (streams/kafka/tables.py)."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer, ConsumerRecord, TopicPartition
from kafka_support import KafkaWorld

from streams.kafka.admin import create_topics
from streams.kafka.tables import changelog_sink, new_reader, read_latest
from streams.kafka.task_offsets import encode_task_offsets, task_offsets_key

pytestmark = pytest.mark.integration

SUBMISSIONS = "placement.submissions"

# (key, value) in the order produced to one changelog partition; None is a tombstone
WRITTEN: list[tuple[bytes, bytes | None]] = [
    (b"Placement/apps/web", b"spec-1"),
    (b"Placement/apps/web/decision", b"decision-1"),
    (b"Application/default", b"queues-1"),
    (task_offsets_key(0), encode_task_offsets({TopicPartition(SUBMISSIONS, 0): 5})),
    (b"Placement/apps/web/decision", b"decision-2"),
    (b"Placement/apps/db", b"spec-1"),
    (b"Application/default", None),
    (task_offsets_key(0), encode_task_offsets({TopicPartition(SUBMISSIONS, 0): 9})),
    (b"Placement/apps/web/decision", b"decision-3"),
    (b"Placement/apps/db/decision", b"decision-1"),
]


async def _write(world: KafkaWorld, entries: list[tuple[bytes, bytes | None]]) -> TopicPartition:
    await create_topics(world.settings())
    changelog = TopicPartition(world.topics.changelog, 0)
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in entries:
            await producer.send_and_wait(changelog.topic, value, key=key, partition=changelog.partition)
    finally:
        await producer.stop()
    return changelog


async def test_only_each_keys_last_entry_is_applied_in_the_order_of_those_entries(world: KafkaWorld) -> None:
    changelog = await _write(world, WRITTEN)
    applied: list[tuple[str, bytes | None]] = []
    recorded: dict[TopicPartition, int] = {}
    reader = new_reader(world.settings().kafka, "latest-test")
    await reader.start()
    try:
        reader.assign([changelog])
        sink = changelog_sink(lambda key, value: applied.append((key, value)), "changelog entry", recorded)
        count = await read_latest(reader, [changelog], sink)
    finally:
        await reader.stop()
    assert count == len(WRITTEN)
    assert applied == [
        ("Placement/apps/web", b"spec-1"),  # its decision entries come after it, as on the way in
        ("Placement/apps/db", b"spec-1"),
        ("Application/default", None),
        ("Placement/apps/web/decision", b"decision-3"),
        ("Placement/apps/db/decision", b"decision-1"),
    ]
    assert recorded == {TopicPartition(SUBMISSIONS, 0): 9}


async def test_a_sink_sees_each_record_at_most_once_across_fetches(world: KafkaWorld) -> None:
    """Versions spread over many reads (16 records each): a key's last one still wins, and the task offsets
    records are all seen, as they are read."""
    versions = [(f"Placement/apps/p{i % 7}/decision".encode(), f"decision-{i}".encode()) for i in range(200)]
    offsets = [(task_offsets_key(0), encode_task_offsets({TopicPartition(SUBMISSIONS, 0): i})) for i in range(3)]
    changelog = await _write(world, [*versions, *offsets])
    seen: list[ConsumerRecord[bytes, bytes]] = []
    reader = new_reader(world.settings().kafka, "latest-test", fetch_max_wait_ms=10)
    await reader.start()
    try:
        reader.assign([changelog])
        count = await read_latest(reader, [changelog], seen.extend, max_records=16)
    finally:
        await reader.stop()
    assert count == 203
    by_key = {record.key: record.value for record in seen if record.key != task_offsets_key(0)}
    assert by_key == dict(versions)  # a dict keeps each key's last value
    assert sorted(by_key.values()) == [f"decision-{i}".encode() for i in range(193, 200)]
    assert len(seen) == 7 + 3
