"""What `placement-stream repartition` copies: each key's latest record, in its subject's new partition."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord

from streams.kafka.tasks import partition_of
from streams.repartition import moved_names, plan_copy, plan_unprocessed, settings_lines
from streams.settings import TopicNames


def record(partition: int, offset: int, key: bytes, value: bytes | None) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("changelog", partition, offset, 1000 + offset, 0, key, value, None, 0, 0, [("h", b"v")])


@pytest.mark.parametrize("count", [1, 3, 6])
def test_each_key_keeps_its_latest_record_in_its_subjects_new_partition(count: int) -> None:
    records = [
        record(0, 0, b"Placement/a/web", b"spec-1"),
        record(0, 1, b"Placement/a/web/decision", b"decision-1"),
        record(0, 2, b"Placement/a/web", b"spec-2"),
        record(1, 0, b"~task-offsets/1", b"[]"),
        record(1, 1, b"~task-offsets/~partitions/2", b"[]"),
        record(1, 2, b"Placement/a/gone", b"spec"),
        record(1, 3, b"Placement/a/gone", None),
        record(1, 4, b"Application/default", b"queues"),
    ]
    copied = plan_copy(records, count, "new")
    assert [(c.key, c.value) for c in copied] == [
        (b"Placement/a/web/decision", b"decision-1"),
        (b"Placement/a/web", b"spec-2"),
        (b"Application/default", b"queues"),
    ], "latest per key, in the order of the latest records; tombstoned keys and keys of no subject stay behind"
    assert [c.partition for c in copied] == [
        partition_of("Placement/a/web", count),
        partition_of("Placement/a/web", count),
        partition_of("Application/default", count),
    ]
    assert copied[0].headers == (("h", b"v"),) and copied[0].timestamp == 1001
    assert {c.topic for c in copied} == {"new"}


def subject_record(partition: int, offset: int, key: str) -> ConsumerRecord[bytes, bytes]:
    value = f"{partition}:{offset}".encode()
    return ConsumerRecord("old", partition, offset, 0, 0, key.encode(), value, None, 0, 0, [])


def test_unprocessed_records_keep_each_subjects_order_across_a_count_change() -> None:
    """Written with 2 partitions, then 3 were added: a subject's records on its old partition came first."""
    moved = next(
        key
        for key in (f"Placement/a/p{i}" for i in range(100))
        if partition_of(key, 2) == 1 and partition_of(key, 3) == 0
    )
    records = [  # partition 0 (where 3 partitions put it) is read before partition 1 (where 2 put it)
        subject_record(0, 0, moved),
        subject_record(1, 5, moved),
        subject_record(1, 6, moved),
        subject_record(0, 1, moved),
    ]
    copied = plan_unprocessed(records, 2, 4, {"old": "new"})
    assert [c.value for c in copied] == [b"1:5", b"1:6", b"0:0", b"0:1"]
    assert {(c.topic, c.partition) for c in copied} == {("new", partition_of(moved, 4))}


def test_only_the_co_partitioned_topics_get_new_names() -> None:
    names = moved_names(TopicNames(), "-p6")
    assert (names.submissions, names.changelog, names.decisions) == (
        "placement.submissions-p6",
        "placement.state-changelog-p6",
        "placement.decisions-p6",
    )
    assert (names.cluster_status, names.taints, names.dead_letter) == (
        TopicNames().cluster_status,
        TopicNames().taints,
        TopicNames().dead_letter,
    )
    assert settings_lines(names, 6)[:2] == [
        "PLACEMENT_KAFKA__TASK_PARTITIONS=6",
        "PLACEMENT_TOPICS__SUBMISSIONS=placement.submissions-p6",
    ]
