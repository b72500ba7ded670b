"""One transactional producer per task (input partition number), with a stable transactional id.

aiokafka speaks only v0 of the transaction APIs (no KIP-447), so fencing rests on the transactional id:
the producer of task p is `<group>-tasks-<p>` on every instance, and starting it fences the previous owner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.partitioner import murmur2
from aiokafka.producer.message_accumulator import BatchBuilder

from connection.security import connection_options
from engine.runtime import OutputRecord
from engine.runtime.records import Header
from streams.errors import ServiceError
from streams.settings import KafkaSettings
from topics.names import LARGE_RECORD_BYTES, TopicRole

__all__ = [
    "MAX_BATCH_BYTES",
    "ProducersClosedError",
    "RecordSender",
    "TaskProducers",
    "add_partitions_early",
    "partition_of",
    "partitions_of",
    "retrieve_later",
    "send_records",
]

MAX_BATCH_BYTES = 1_048_576
"""aiokafka keeps one produce request in flight per broker and one batch per partition in it, so the batch
size bounds what a partition moves per round trip: 1 MiB sent a 50 MB change in 229-321 ms where 256 KiB
took 360-540 ms once warm (4 MiB gained nothing more)."""


class ProducersClosedError(ServiceError):
    """A task producer was asked for after the service began to stop."""


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a key (murmur2, as the Java client)."""
    return int((murmur2(key.encode()) & 0x7FFFFFFF) % partitions)


_SEED = 0x9747B28C
_MIX = np.uint32(0x5BD1E995)


def partitions_of(keys: Sequence[str], partitions: int) -> list[int]:
    """`partition_of` of many keys: murmur2 in numpy's wrapping uint32 arithmetic, a column of 4 bytes at a
    time over the keys of each length. aiokafka's murmur2 is pure Python, about 4 µs a key: a restore of
    100,000 subjects spent 0.4 s hashing them one by one."""
    encoded = [key.encode() for key in keys]
    by_length: dict[int, list[int]] = {}
    for index, data in enumerate(encoded):
        by_length.setdefault(len(data), []).append(index)
    found = np.zeros(len(encoded), dtype=np.int64)
    for length, indexes in by_length.items():
        rows = np.frombuffer(b"".join([encoded[i] for i in indexes]), dtype=np.uint8).reshape(len(indexes), length)
        h = np.full(len(indexes), _SEED ^ length, dtype=np.uint32)
        whole = length - length % 4
        words = np.ascontiguousarray(rows[:, :whole]).view("<u4")  # little-endian, as the Java client reads
        for column in range(whole // 4):
            k = words[:, column] * _MIX
            k ^= k >> 24
            k *= _MIX
            h *= _MIX
            h ^= k
        tail = length % 4
        if tail >= 3:
            h ^= rows[:, whole + 2].astype(np.uint32) << 16
        if tail >= 2:
            h ^= rows[:, whole + 1].astype(np.uint32) << 8
        if tail >= 1:
            h ^= rows[:, whole].astype(np.uint32)
            h *= _MIX
        h ^= h >> 13
        h *= _MIX
        h ^= h >> 15
        found[indexes] = (h & 0x7FFFFFFF) % partitions
    return [int(task) for task in found.tolist()]


class RecordSender:
    """Sends one producer's records, packed into one record batch per partition, each batch as soon as it is
    full: a large output goes on the wire while the rest of it is still being produced.

    A subject's records go to the subject's task partition: its decisions are keyed by the subject (the
    default partitioner would pick the same one) and its changelog parts must land with them. Packing them
    here costs a fraction of a `send` per record; records without a subject are sent one by one.
    """

    def __init__(
        self, producer: AIOKafkaProducer, topic_of: Callable[[TopicRole], str], task_of: Callable[[str], int]
    ) -> None:
        self._producer = producer
        self._topic_of = topic_of
        self._task_of = task_of
        self._batches: dict[tuple[str, int], BatchBuilder] = {}
        self._futures: list[asyncio.Future[Any]] = []
        self.partitions: set[TopicPartition] = set()
        """The partitions the records flushed so far went to, by their acknowledgements, so a task's next
        transaction adds them early (see `flush`)."""

    async def add(self, records: Iterable[OutputRecord]) -> None:
        """Queue records, in order per partition; full batches are handed to the producer."""
        producer = self._producer
        for r in records:
            topic, headers = self._topic_of(r.topic), list(r.headers)
            if r.subject is None:
                self._futures.append(await producer.send(topic, r.value, key=r.key, headers=headers or None))
                continue
            await self._append((topic, self._task_of(r.subject)), r.key, r.value, headers)

    async def add_pinned(
        self, topic: TopicRole, key: bytes, value: bytes, partition: int, headers: Sequence[Header] = ()
    ) -> None:
        """Queue one record for an exact partition (a task's own changelog partition), in the batch of the
        records already bound there, so it costs no request of its own."""
        await self._append((self._topic_of(topic), partition), key, value, list(headers))

    async def _append(
        self, route: tuple[str, int], key: bytes | None, value: bytes | None, headers: list[Header]
    ) -> None:
        batch = self._batches.get(route)
        if batch is None or batch.append(timestamp=None, key=key, value=value, headers=headers) is None:
            if batch is not None:  # full: send it and start the next one
                self._futures.append(await self._producer.send_batch(batch, route[0], partition=route[1]))
            batch = self._batches[route] = self._producer.create_batch()
            batch.append(timestamp=None, key=key, value=value, headers=headers)  # a new batch takes any one

    def discard(self) -> None:
        """Forget the records queued so far (their transaction is being aborted): whatever their delivery
        futures end with is retrieved here, so no 'exception was never retrieved' is logged at exit."""
        self._batches.clear()
        futures, self._futures = self._futures, []
        for future in futures:
            retrieve_later(future)

    async def hand_over(self) -> None:
        """Give the producer every partly filled batch at once, without waiting: a transaction then adds all
        its partitions in one AddPartitionsToTxn and sends them in one produce request per broker."""
        batches, self._batches = self._batches, {}
        for (topic, partition), batch in batches.items():
            self._futures.append(await self._producer.send_batch(batch, topic, partition=partition))

    async def flush(self) -> None:
        """Hand over the partly filled batches and wait until every record queued so far is acknowledged.

        Every record's partition is learnt from its acknowledgement, those of records without a subject (dead
        letters, placed by the default partitioner) too, so all of them join the task's next transaction. Its
        markers then also complete any of this transaction's data left open there: a broker killed while
        committing was seen (Kafka 4.4) to complete the commit after its restart without writing the markers,
        and a read_committed reader stays stuck at such data until the same producer's next marker there.
        """
        await self.hand_over()
        futures, self._futures = self._futures, []
        if futures:
            sent = await asyncio.gather(*futures)  # RecordMetadata each: every producer here waits for acks
            self.partitions.update(metadata.topic_partition for metadata in sent)


def retrieve_later(future: asyncio.Future[Any]) -> None:
    """Retrieve whatever a future nobody awaits any more ends with, so no 'exception was never retrieved' is
    logged at exit."""
    future.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def add_partitions_early(producer: AIOKafkaProducer, partitions: Iterable[TopicPartition]) -> None:
    """Add partitions to the producer's open transaction before any record is sent to them, so their
    AddPartitionsToTxn round trip is over when the records come. aiokafka adds a partition only when a batch for
    it is handed over, and has no public call for this, so its transaction manager is asked directly; where a
    future aiokafka lacks it, the partitions are added with their first batch, as before."""
    manager = getattr(producer, "_txn_manager", None)
    add = getattr(manager, "maybe_add_partition_to_txn", None)
    if add is None:
        return
    for tp in partitions:
        add(tp)


async def send_records(
    producer: AIOKafkaProducer,
    records: Sequence[OutputRecord],
    topic_of: Callable[[TopicRole], str],
    task_of: Callable[[str], int],
) -> None:
    """Send records, in order per partition, and wait until all are acknowledged."""
    sender = RecordSender(producer, topic_of, task_of)
    await sender.add(records)
    await sender.flush()


TRANSACTION_RETRY_BACKOFF_MS = 20
"""How soon a task producer retries a refused request. A task's next transaction usually begins while the
broker is still writing the previous one's markers, and its first AddPartitionsToTxn is then refused
(CONCURRENT_TRANSACTIONS) until they are written: with aiokafka's default of 100 ms every such batch waited
100 ms (commit 81 ms on average at 100 submissions/s, 31 ms at 20 ms). Java's producer retries this case
after 20 ms too."""


class TaskProducers:
    """Starts, holds and stops the transactional producer of each owned task."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self._kafka = kafka
        self._producers: dict[int, AIOKafkaProducer] = {}
        self.written: dict[int, frozenset[TopicPartition]] = {}
        """The partitions each task's last committed transaction wrote: its next one adds them early."""
        self._group_offsets_at: dict[int, float] = {}
        """When each task's offsets last went to the group (`time.monotonic()`), in a transaction or after one."""
        self._stopping: set[asyncio.Future[None]] = set()
        self._closed = False
        """Set by `stop_all`: a rebalance listener still running must not start a producer nobody stops."""

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
        if self._closed:
            raise ProducersClosedError(f"task {partition}: the service is stopping")
        kafka = self._kafka
        producer = AIOKafkaProducer(
            **connection_options(kafka),
            client_id=f"{kafka.client_id}-task-{partition}",
            transactional_id=self.transactional_id(partition),
            transaction_timeout_ms=kafka.transaction_timeout_ms,
            compression_type=kafka.compression(),
            linger_ms=0,
            retry_backoff_ms=TRANSACTION_RETRY_BACKOFF_MS,
            max_batch_size=MAX_BATCH_BYTES,
            max_request_size=LARGE_RECORD_BYTES + 65_536,  # room for one whole-state changelog record
        )
        try:
            await producer.start()
        except BaseException:  # e.g. the broker is away: close what was opened, or it leaks at every retry
            await producer.stop()
            raise
        self._producers[partition] = producer
        return producer

    def group_offsets_due(self, partition: int) -> bool:
        """Whether the task's next transaction also commits its offsets to the group: its first one does, then
        one per `group_offsets_interval_ms` (see KafkaSettings)."""
        at = self._group_offsets_at.get(partition)
        return at is None or (time.monotonic() - at) * 1000 >= self._kafka.group_offsets_interval_ms

    def group_offsets_sent(self, partition: int, at: float) -> None:
        """The task's offsets went to the group at `at` (with a transaction that committed, or after them by the
        loop): the next are due an interval later."""
        self._group_offsets_at[partition] = at

    async def stop(self, partition: int) -> None:
        """Stop one task's producer, if started."""
        producer = self._producers.pop(partition, None)
        self.written.pop(partition, None)
        self._group_offsets_at.pop(partition, None)
        if producer is not None:
            await producer.stop()

    async def stop_all(self, timeout: float | None = None) -> None:
        """Stop every producer concurrently, waiting at most `timeout` seconds if given (with the broker away a
        stop can wait for ever); a stop still running then goes on, never cut short half way."""
        self._closed = True
        stops = {asyncio.ensure_future(self.stop(partition)) for partition in list(self._producers)}
        self._stopping |= stops
        for stop in stops:
            stop.add_done_callback(self._stopping.discard)
        if stops:
            await asyncio.wait(stops, timeout=timeout)
