"""One transactional producer per task (input partition number), with a stable transactional id.

aiokafka speaks only v0 of the transaction APIs (no KIP-447), so fencing rests on the transactional id:
the producer of task p is `<group>-tasks-<p>` on every instance, and starting it fences the previous owner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import murmur2
from aiokafka.producer.message_accumulator import BatchBuilder

from engine.runtime import OutputRecord
from streams.settings import KafkaSettings
from topics.names import LARGE_RECORD_BYTES, TopicRole

__all__ = ["TaskProducers", "partition_of", "send_records"]


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a key (murmur2, as the Java client)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


async def send_records(
    producer: AIOKafkaProducer,
    records: Sequence[OutputRecord],
    topic_of: Callable[[TopicRole], str],
    task_of: Callable[[str], int],
) -> None:
    """Send records, in order per partition, and wait until all are acknowledged.

    A subject's records go to the subject's task partition: its decisions are keyed by the subject (the
    default partitioner would pick the same one) and its changelog parts must land with them. They are packed
    into record batches here, which costs a fraction of a `send` per record; the rest are sent one by one.
    """
    futures: list[asyncio.Future[Any]] = []
    batches: dict[tuple[str, int], BatchBuilder] = {}
    for r in records:
        topic, headers = topic_of(r.topic), list(r.headers)
        if r.subject is None:
            futures.append(await producer.send(topic, r.value, key=r.key, headers=headers or None))
            continue
        route = (topic, task_of(r.subject))
        batch = batches.get(route)
        if batch is None or batch.append(timestamp=None, key=r.key, value=r.value, headers=headers) is None:
            if batch is not None:  # full: send it and start the next one
                futures.append(await producer.send_batch(batch, topic, partition=route[1]))
            batch = batches[route] = producer.create_batch()
            batch.append(timestamp=None, key=r.key, value=r.value, headers=headers)  # a new batch takes any one
    for (topic, partition), batch in batches.items():
        futures.append(await producer.send_batch(batch, topic, partition=partition))
    if futures:
        await asyncio.gather(*futures)


class TaskProducers:
    """Starts, holds and stops the transactional producer of each owned task."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self._kafka = kafka
        self._producers: dict[int, AIOKafkaProducer] = {}

    def transactional_id(self, partition: int) -> str:
        """Stable across restarts and instances, so a new owner fences the old one."""
        return f"{self._kafka.group_id}-tasks-{partition}"

    @property
    def owned(self) -> frozenset[int]:
        """Task partitions with a started producer."""
        return frozenset(self._producers)

    def get(self, partition: int) -> AIOKafkaProducer:
        """The producer of an owned task."""
        return self._producers[partition]

    async def start(self, partition: int) -> AIOKafkaProducer:
        """Start (or restart) the producer of a task; aborts whatever the previous owner left open."""
        await self.stop(partition)
        kafka = self._kafka
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers,
            client_id=f"{kafka.client_id}-task-{partition}",
            transactional_id=self.transactional_id(partition),
            transaction_timeout_ms=kafka.transaction_timeout_ms,
            compression_type=kafka.compression(),
            linger_ms=5,
            max_batch_size=262_144,
            max_request_size=LARGE_RECORD_BYTES + 65_536,  # room for one whole-state changelog record
        )
        await producer.start()
        self._producers[partition] = producer
        return producer

    async def stop(self, partition: int) -> None:
        """Stop one task's producer, if started."""
        producer = self._producers.pop(partition, None)
        if producer is not None:
            await producer.stop()

    async def stop_all(self) -> None:
        """Stop every producer."""
        for partition in list(self._producers):
            await self.stop(partition)
