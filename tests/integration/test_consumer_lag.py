"""The consumer-lag gauge: stable end minus what this instance committed, read without waiting on the broker."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafka_support import KafkaWorld

from streams.kafka.admin import create_topics
from streams.metrics import Metrics

pytestmark = pytest.mark.integration


def _lag(metrics: Metrics, tp: TopicPartition) -> float | None:
    labels = {"topic": tp.topic, "partition": str(tp.partition)}
    return metrics.registry.get_sample_value("placement_consumer_lag", labels)


async def test_lag_counts_from_the_committed_position_and_skips_partitions_without_one(world: KafkaWorld) -> None:
    await create_topics(world.settings())
    read, empty = (TopicPartition(world.topics.submissions, p) for p in (0, 1))
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap)
    await producer.start()
    try:
        for n in range(5):
            await producer.send_and_wait(read.topic, b"x", partition=read.partition, key=str(n).encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=world.bootstrap, isolation_level="read_committed")
    await consumer.start()
    try:
        consumer.assign([read, empty])
        await consumer.seek_to_beginning(read, empty)
        seen = 0
        while seen < 5:
            seen += sum(len(b) for b in (await consumer.getmany(timeout_ms=1000)).values())
        metrics = Metrics()
        metrics.record_lag(consumer, {read: 2})
        assert _lag(metrics, read) == 3
        assert _lag(metrics, empty) is None, "no committed position, no figure"
        consumer.assign([empty])  # a rebalance took the partition: its series goes, no stale figure stays
        metrics.record_lag(consumer, {read: 5, empty: 0})
        assert _lag(metrics, read) is None
    finally:
        await consumer.stop()
