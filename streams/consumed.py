"""Consumed records as the runtime takes them, and the polled records a batch must leave out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from engine.runtime import InputRecord
from streams.kafka.clients import Records
from topics.names import TopicRole

__all__ = ["Records", "input_records", "unpoll", "utcnow", "without_processed"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def input_records(records: Iterable[ConsumerRecord[bytes, bytes]], roles: Mapping[str, TopicRole]) -> list[InputRecord]:
    """Consumed records as the runtime takes them."""
    return [
        InputRecord(
            topic=roles[r.topic],
            partition=r.partition,
            offset=r.offset,
            key=r.key,
            value=r.value,
            timestamp=datetime.fromtimestamp(r.timestamp / 1000, UTC) if r.timestamp >= 0 else None,
            topic_name=r.topic,
            headers=tuple(r.headers) if r.headers else (),
        )
        for r in records
    ]


def without_processed(
    subjects: Records, floors: Mapping[TopicPartition, int]
) -> tuple[Records, dict[TopicPartition, int]]:
    """The polled records minus those below the position this instance committed (or restored to): its state
    already holds them, so deciding them again would publish their decisions twice. Such records come back when
    a consumer position falls back, which a broker restart in the middle of a rebalance was seen to cause (two
    decisions of one producer with no fence between). Returns the records kept and how many were dropped per
    partition."""
    kept: Records = {}
    dropped: dict[TopicPartition, int] = {}
    for tp, records in subjects.items():
        floor = floors.get(tp)
        if floor is None or not records or records[0].offset >= floor:
            kept[tp] = records
            continue
        fresh = [r for r in records if r.offset >= floor]
        dropped[tp] = len(records) - len(fresh)
        kept[tp] = fresh
    return kept, dropped


def unpoll(consumer: AIOKafkaConsumer, subjects: Records, to: Mapping[TopicPartition, int]) -> None:
    """Leave polled records unprocessed: each assigned partition goes back to `to`, else to its first polled
    record, so they are fetched again."""
    assigned = consumer.assignment()
    for tp, records in subjects.items():
        if records and tp in assigned:
            consumer.seek(tp, to.get(tp, records[0].offset))
