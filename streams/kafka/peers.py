"""Following what other instances decide: the changelog partitions of the tasks this instance does not own.

Some decisions read subjects owned elsewhere (OCM's Balance counts the decisions of every other placement), so
with several instances each one reads the others' changelog entries, as Kafka Streams would read a global
table. Entries of owned tasks are not read: the restored state is the newer.
"""

from __future__ import annotations

from collections.abc import Collection

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from streams.kafka.tables import EntrySink, changelog_sink, new_reader, read_latest
from streams.settings import KafkaSettings

__all__ = ["PeerChangelog"]


class PeerChangelog:
    """A group-less reader of the changelog partitions of other instances' tasks."""

    def __init__(self, kafka: KafkaSettings, client_id: str, topic: str, partitions: int, apply: EntrySink) -> None:
        self._consumer: AIOKafkaConsumer = new_reader(kafka, client_id)
        self._topic = topic
        self._partitions = partitions
        self._sink = changelog_sink(apply, "peer changelog entry")
        self._owned: frozenset[int] = frozenset()

    async def start(self) -> None:
        """Connect; nothing is read before `follow` names the tasks owned here."""
        await self._consumer.start()

    async def follow(self, owned: Collection[int]) -> int:
        """Follow every task not in `owned`, and return once each new one is read to its end; returns the count
        of records read. A partition followed before keeps its position; one owned here until now is read from
        its end, as this instance wrote all of it and released its subjects' decisions to the peers' view; any
        other is read from its start (a single instance owns every task and reads nothing)."""
        consumer = self._consumer
        before = {tp: await consumer.position(tp) for tp in consumer.assignment()}
        wanted = [TopicPartition(self._topic, p) for p in range(self._partitions) if p not in owned]
        released = [tp for tp in wanted if tp.partition in self._owned]
        fresh = [tp for tp in wanted if tp not in before and tp.partition not in self._owned]
        end = await consumer.end_offsets(released) if released else {}
        consumer.assign(wanted)
        for tp in wanted:
            offset = before.get(tp, end.get(tp))
            if offset is not None:
                consumer.seek(tp, offset)
        self._owned = frozenset(owned)
        return await read_latest(consumer, fresh, self._sink)

    async def poll(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        """What has arrived, without waiting."""
        batches: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = await self._consumer.getmany(
            timeout_ms=0, max_records=max_records
        )
        return batches

    def apply(self, batches: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]], owned: Collection[int]) -> None:
        """Apply polled records, except those of tasks owned since the poll (their restore covers them)."""
        for tp, records in batches.items():
            if tp.partition not in owned:
                self._sink(records)

    async def stop(self) -> None:
        """Stop reading."""
        await self._consumer.stop()
