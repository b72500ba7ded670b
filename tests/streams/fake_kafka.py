"""An in-memory Kafka for the shell's unit tests: committed logs, transactional task producers that commit or
abort them, and consumers that read what was committed. No broker; what a test needs to fail is said by the
broker's `refused` (records it will not take, as a broker refuses a record too large)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.errors import ProducerFenced, RecordTooLargeError
from aiokafka.structs import OffsetAndMetadata, RecordMetadata

from streams.kafka.tasks import TaskProducers
from streams.settings import KafkaSettings

Pending = tuple[TopicPartition, bytes | None, bytes | None, list[tuple[str, bytes]]]


@dataclass
class FakeBroker:
    """The committed records of every partition and the group's offsets."""

    logs: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = field(default_factory=dict)
    group_offsets: dict[TopicPartition, tuple[int, str]] = field(default_factory=dict)
    outcomes: list[tuple[str, str]] = field(default_factory=list)
    """(transactional id, "committed" or "aborted") of each transaction, in order."""
    epochs: dict[str, int] = field(default_factory=dict)
    """The producer epoch of each transactional id: starting a producer fences the previous one."""
    refused: Callable[[str, bytes | None], bool] = lambda _topic, _key: False
    """Records (by topic and key) the broker refuses (RecordTooLargeError), aborting their transaction."""
    committing: Callable[[str], None] = lambda _id: None
    """Hears of each commit before it is made (a test fences a producer from here)."""

    def log(self, tp: TopicPartition) -> list[ConsumerRecord[bytes, bytes]]:
        return self.logs.setdefault(tp, [])

    def append(self, tp: TopicPartition, key: bytes | None, value: bytes | None, headers: Sequence[Any] = ()) -> None:
        log = self.log(tp)
        stamp = int(time.time() * 1000)
        log.append(ConsumerRecord(tp.topic, tp.partition, len(log), stamp, 0, key, value, None, 0, 0, tuple(headers)))

    def keys(self, topic: str) -> list[bytes | None]:
        """The keys of every committed record of `topic`, partition by partition."""
        return [r.key for tp in sorted(self.logs) if tp.topic == topic for r in self.logs[tp]]


class FakeBatch:
    """A record batch that holds `limit` records."""

    def __init__(self, limit: int = 64) -> None:
        self.records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
        self._limit = limit

    def append(self, *, timestamp: Any, key: bytes | None, value: bytes | None, headers: Any) -> object | None:
        if len(self.records) >= self._limit:
            return None
        self.records.append((key, value, list(headers or ())))
        return object()


class _Transaction:
    def __init__(self, producer: FakeProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> None:
        self._producer.begin()

    async def __aexit__(self, kind: Any, error: Any, tb: Any) -> bool:
        if kind is None:
            self._producer.commit()
        else:
            self._producer.abort()
        return False


class FakeProducer:
    """A producer writing into a FakeBroker: in a transaction when it has a transactional id, else at once."""

    def __init__(self, broker: FakeBroker, transactional_id: str | None = None) -> None:
        self._broker = broker
        self._id = transactional_id
        self._epoch = 0
        if transactional_id is not None:
            self._epoch = broker.epochs[transactional_id] = broker.epochs.get(transactional_id, 0) + 1
        self._pending: list[Pending] | None = None
        self._offsets: dict[TopicPartition, tuple[int, str]] = {}

    def transaction(self) -> _Transaction:
        return _Transaction(self)

    def begin(self) -> None:
        assert self._pending is None, "one transaction at a time"
        self._pending, self._offsets = [], {}

    def commit(self) -> None:
        assert self._id is not None and self._pending is not None
        self._broker.committing(self._id)
        if self._broker.epochs[self._id] != self._epoch:
            self._pending = None
            raise ProducerFenced()
        for tp, key, value, headers in self._pending:
            self._broker.append(tp, key, value, headers)
        self._broker.group_offsets.update(self._offsets)
        self._pending = None
        self._broker.outcomes.append((self._id, "committed"))

    def abort(self) -> None:
        assert self._id is not None
        self._pending = None
        self._broker.outcomes.append((self._id, "aborted"))

    async def partitions_for(self, topic: str) -> set[int]:
        return {0}

    def create_batch(self) -> FakeBatch:
        return FakeBatch()

    async def send(
        self, topic: str, value: bytes | None, key: bytes | None = None, headers: Any = None, partition: int = 0
    ) -> asyncio.Future[RecordMetadata]:
        return self._write(TopicPartition(topic, partition), [(key, value, list(headers or ()))])

    async def send_batch(self, batch: FakeBatch, topic: str, *, partition: int) -> asyncio.Future[RecordMetadata]:
        return self._write(TopicPartition(topic, partition), batch.records)

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, tuple[int, str]], group_id: str) -> None:
        assert self._pending is not None, "offsets outside a transaction"
        self._offsets.update(offsets)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def _write(
        self, tp: TopicPartition, records: Iterable[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]
    ) -> asyncio.Future[RecordMetadata]:
        acked: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        records = list(records)
        if any(self._broker.refused(tp.topic, key) for key, _, _ in records):
            acked.set_exception(RecordTooLargeError())
            return acked
        for key, value, headers in records:
            if self._pending is None:
                self._broker.append(tp, key, value, headers)
            else:
                self._pending.append((tp, key, value, headers))
        acked.set_result(RecordMetadata(tp.topic, tp.partition, tp, -1, -1, 0, 0))
        return acked


class FakeTaskProducers(TaskProducers):
    """TaskProducers whose producers write into a FakeBroker (the rest is the real bookkeeping)."""

    def __init__(self, kafka: KafkaSettings, broker: FakeBroker) -> None:
        super().__init__(kafka)
        self._broker = broker

    async def start(self, partition: int) -> Any:
        await self.stop(partition)
        producer = FakeProducer(self._broker, self.transactional_id(partition))
        self._producers[partition] = producer
        return producer


class FakeConsumer:
    """A read_committed consumer of a FakeBroker's logs, with the group's offsets in the broker."""

    def __init__(self, broker: FakeBroker, assigned: Iterable[TopicPartition] = ()) -> None:
        self._broker = broker
        self._assigned = set(assigned)
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._coordinator = self
        self.idle: Callable[[], None] = lambda: None
        """Called when a poll of the assignment finds nothing new."""
        self.fetched: Callable[[dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]], None] = lambda _r: None
        """Called with what a poll of the assignment found, when it found something."""

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._assigned = set(partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def pause(self, *partitions: TopicPartition) -> None:
        self._paused |= set(partitions)

    def paused(self) -> set[TopicPartition]:
        return set(self._paused)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._positions[tp] = offset

    async def position(self, tp: TopicPartition) -> int:
        return self._positions.get(tp, 0)

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: len(self._broker.log(tp)) for tp in partitions}

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(partitions, 0)

    def last_stable_offset(self, tp: TopicPartition) -> int:
        return len(self._broker.log(tp))

    async def committed(self, tp: TopicPartition) -> int | None:
        committed = self._broker.group_offsets.get(tp)
        return None if committed is None else committed[0]

    async def fetch_committed_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Any]:
        offsets = self._broker.group_offsets
        return {tp: OffsetAndMetadata(*offsets[tp]) for tp in partitions if tp in offsets}

    async def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        self._broker.group_offsets.update(offsets)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        await asyncio.sleep(0)
        left = max_records or 1_000_000
        fetched: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = {}
        for tp in sorted(partitions or self._assigned - self._paused):
            at = self._positions.get(tp, 0)
            records = self._broker.log(tp)[at : at + left]
            if records:
                fetched[tp] = records
                self._positions[tp] = at + len(records)
                left -= len(records)
        if not partitions:
            if fetched:
                self.fetched(fetched)
            else:
                self.idle()
        return fetched


class FakeBarrier:
    """The inventory barrier over records given up front: read once, then nothing new."""

    def __init__(self, inventory: Sequence[ConsumerRecord[bytes, bytes]] = ()) -> None:
        self._pending = list(inventory)

    async def read(
        self, *, to_end: bool, max_records: int, subjects: Sequence[TopicPartition]
    ) -> tuple[list[ConsumerRecord[bytes, bytes]], dict[TopicPartition, int]]:
        records, self._pending = self._pending, []
        return records, {}

    def give_back(self, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        self._pending = records + self._pending

    async def probe(self) -> None:
        pass


class FakePeers:
    """No other instance."""

    async def follow(self, owned: Any) -> int:
        return 0

    async def poll(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        return {}

    def apply(self, batches: Any, owned: Any) -> None:
        pass
