"""The local broker launcher against a real Kafka: admin, topics, transactions, restart on the same data dir."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from localbroker import LocalBroker, ensure_kafka_libs

pytestmark = pytest.mark.integration

TOPIC_ALREADY_EXISTS = 36


def _topic() -> str:
    return f"lb-{uuid.uuid4().hex[:12]}"


async def _create_topic(bootstrap: str, name: str) -> int:
    """Create one topic and return its error code (create_topics reports errors, it does not raise)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    (entry,) = response.topic_errors
    assert entry[0] == name
    return int(entry[1])


async def _list_topics(bootstrap: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await admin.list_topics()
    finally:
        await admin.close()


async def test_broker_answers_admin_request(kafka_bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
    finally:
        await admin.close()
    assert len(cluster["brokers"]) == 1


async def test_created_topic_is_listed_and_second_create_reports_36(kafka_bootstrap: str) -> None:
    name = _topic()
    assert await _create_topic(kafka_bootstrap, name) == 0
    assert name in await _list_topics(kafka_bootstrap)
    assert await _create_topic(kafka_bootstrap, name) == TOPIC_ALREADY_EXISTS


async def test_committed_transaction_is_visible_to_read_committed_consumer(kafka_bootstrap: str) -> None:
    name = _topic()
    assert await _create_topic(kafka_bootstrap, name) == 0
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"txn-{name}")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(name, b"committed", key=b"k")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        name,
        bootstrap_servers=kafka_bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    values: list[bytes | None] = []
    try:
        async with asyncio.timeout(30):
            while not values:
                batches = await consumer.getmany(timeout_ms=500)
                values += [record.value for records in batches.values() for record in records]
    finally:
        await consumer.stop()
    assert values == [b"committed"]


async def test_restart_on_same_data_dir_keeps_topics(tmp_path: Path) -> None:
    broker = LocalBroker(tmp_path / "broker", ensure_kafka_libs())
    name = _topic()
    try:
        first = await broker.astart()
        assert await _create_topic(first, name) == 0
        assert await broker.astop() in {0, 143}

        second = await broker.astart()
        assert second == first, "a restart must reuse the recorded ports"
        assert name in await _list_topics(second)
        assert await _create_topic(second, name) == TOPIC_ALREADY_EXISTS
    finally:
        await broker.astop()
