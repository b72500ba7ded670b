"""One transactional producer per task (input partition number), with a stable transactional id.

aiokafka speaks only v0 of the transaction APIs (no KIP-447), so fencing rests on the transactional id:
the producer of task p is `<group>-tasks-<p>` on every instance, and starting it fences the previous owner.
"""

from __future__ import annotations

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import murmur2

from topics.names import LARGE_RECORD_BYTES

__all__ = ["TaskProducers", "partition_of"]


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a key (murmur2, as the Java client)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


class TaskProducers:
    """Starts, holds and stops the transactional producer of each owned task."""

    def __init__(self, bootstrap_servers: str, group_id: str, client_id: str, transaction_timeout_ms: int) -> None:
        self._bootstrap = bootstrap_servers
        self._group_id = group_id
        self._client_id = client_id
        self._timeout_ms = transaction_timeout_ms
        self._producers: dict[int, AIOKafkaProducer] = {}

    def transactional_id(self, partition: int) -> str:
        """Stable across restarts and instances, so a new owner fences the old one."""
        return f"{self._group_id}-tasks-{partition}"

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
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            client_id=f"{self._client_id}-task-{partition}",
            transactional_id=self.transactional_id(partition),
            transaction_timeout_ms=self._timeout_ms,
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
