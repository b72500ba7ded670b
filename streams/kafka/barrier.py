"""The inventory barrier: subject records are decided on inventory at least as new as themselves.

Kafka Streams synchronises a task's inputs by timestamp, but its global tables run on their own thread and
give no such promise; a placement produced right after its cluster set could be decided before the set was
read, and a deployer acting on that "no clusters" decision removes the workload everywhere. So whenever subject
records were fetched, the tables are read up to the end offsets they have now, which is after those records
were fetched and therefore after anything produced before them.

The end offsets are asked through a client of their own: on the tables reader's connection the request would
queue behind its long-polling fetch, which the broker holds for up to the fetch wait when nothing is new. That
client learns the table and subject topics' partition leaders while the tables are caught up: aiokafka looks a
partition's leader up only when an offsets request first names it, and then answers after its retry backoff,
which cost the first batch after every start 100-200 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from streams.kafka.tables import RecordSink, new_reader, read_to_end
from streams.settings import KafkaSettings

__all__ = ["OFFSETS_RETRY_BACKOFF_MS", "InventoryBarrier"]

OFFSETS_RETRY_BACKOFF_MS = 20
"""How soon the offsets client asks again after learning that it does not know a partition's leader (at its
first request for a topic, and after a leader moved): every batch with subject records waits for its answer,
and aiokafka's 100 ms made the leaders' lookup outlast the tables' catch-up."""

_LEARN_SECONDS = 2.0
"""At most this long the catch-up waits for the leaders' lookup; a read meets whatever it did not learn."""


class InventoryBarrier:
    """Reads the global tables' new records, up to their current end when a batch has subject records."""

    @classmethod
    async def catch_up(
        cls, kafka: KafkaSettings, topics: Sequence[str], sink: RecordSink, subject_topics: Sequence[str] = ()
    ) -> tuple[InventoryBarrier, int]:
        """Read every partition of the table topics from the beginning to their end of now into `sink` (the
        GlobalKTable rule: nothing is decided before), then keep tailing them; returns the record count too.
        `subject_topics`: those whose end offsets `read` will ask along with the tables'."""
        tables = new_reader(kafka, f"{kafka.client_id}-tables")
        offsets = new_reader(kafka, f"{kafka.client_id}-offsets", retry_backoff_ms=OFFSETS_RETRY_BACKOFF_MS)
        try:
            await tables.start()
            await offsets.start()
            partitions = _partitions(tables, topics)
            tables.assign(partitions)
            learnt = [*topics, *subject_topics]
            count, _ = await asyncio.gather(
                read_to_end(tables, partitions, sink), _learn_leaders(offsets, tables, learnt, _LEARN_SECONDS)
            )
        except BaseException:  # e.g. a stop during catch-up: the caller holds no reader yet, so close them here
            await asyncio.gather(tables.stop(), offsets.stop(), return_exceptions=True)
            raise
        return cls(tables, offsets, partitions, kafka.session_timeout_ms / 1000), count

    async def stop(self) -> None:
        """Stop both readers."""
        await self._tables.stop()
        await self._offsets.stop()

    def __init__(
        self,
        tables: AIOKafkaConsumer,
        offsets: AIOKafkaConsumer,
        partitions: Sequence[TopicPartition],
        timeout: float,
    ) -> None:
        self._tables = tables
        self._offsets = offsets
        self._partitions = list(partitions)
        self._timeout = timeout
        self._held: list[ConsumerRecord[bytes, bytes]] = []
        """Records already fetched, past the tables' positions, that no batch has applied yet: a read that failed
        fetched them, or a batch gave them back. Dropping them would lose those inventory changes for good."""

    async def read(
        self, *, to_end: bool, max_records: int, subjects: Sequence[TopicPartition] = ()
    ) -> tuple[list[ConsumerRecord[bytes, bytes]], dict[TopicPartition, int]]:
        """What the tables have fetched so far; with `to_end`, everything up to their end offsets of now, and the
        end offsets of `subjects`, asked first and answered before the tables' are asked: a subject record below
        them was produced before the tables' ends were taken, so the batch may take it too (see top_up). In one
        request the broker may take the subjects' ends after the tables' (it goes through the partitions in turn),
        and a subject produced in between, with its inventory, would be decided without that inventory.

        Raises TimeoutError when the broker does not answer within the timeout: the caller must not decide the
        batch then (its records are fetched again after the consumer is rewound). What the read had fetched of the
        tables is kept for the next read."""
        tables = self._tables
        found, self._held = self._held, []
        try:
            fetched = await tables.getmany(timeout_ms=0, max_records=max_records)
            found.extend(r for batch in fetched.values() for r in batch)
            if not to_end:
                return found, {}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._timeout  # the whole read, however many requests it takes

            def left() -> float:
                return max(deadline - loop.time(), 0.0)

            offsets = self._offsets
            ends = await asyncio.wait_for(offsets.end_offsets(list(subjects)), left()) if subjects else {}
            end = await asyncio.wait_for(offsets.end_offsets(self._partitions), left())
            while pending := [tp for tp in self._partitions if await tables.position(tp) < end[tp]]:
                if not left():
                    raise TimeoutError(f"the inventory tables did not reach their end within {self._timeout}s")
                wait_ms = int(min(left(), 0.2) * 1000)
                fetched = await tables.getmany(*pending, timeout_ms=wait_ms, max_records=max_records)
                found.extend(r for batch in fetched.values() for r in batch)
        except BaseException:
            self._held = found
            raise
        return found, ends

    def give_back(self, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        """Records a read returned that their batch did not apply (it failed after the read): the next read
        returns them first, in order."""
        self._held = [*records, *self._held]

    async def probe(self, timeout: float = 2.0) -> None:
        """Ask the broker for the tables' end offsets: raises TimeoutError or a KafkaError when it does not answer,
        which is how the processor learns that the broker is out of reach (the consumers only go quiet)."""
        await asyncio.wait_for(self._offsets.end_offsets(self._partitions), timeout)


def _partitions(reader: AIOKafkaConsumer, topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of the topics, as the reader's metadata has them (one partition when it has none)."""
    return [TopicPartition(t, p) for t in topics for p in sorted(reader.partitions_for_topic(t) or {0})]


async def _learn_leaders(
    offsets: AIOKafkaConsumer, metadata: AIOKafkaConsumer, topics: Sequence[str], timeout: float
) -> None:
    """Ask the offsets client for the end offsets of every partition of `topics`, one request per topic (a request
    learns the leaders of its first unknown topic only, then backs off), so that the barrier's reads find them
    known. A failure is left to those reads to meet; only the time is bounded here."""
    asks = [offsets.end_offsets(_partitions(metadata, [topic])) for topic in topics]
    with contextlib.suppress(TimeoutError, KafkaError):
        await asyncio.wait_for(asyncio.gather(*asks), timeout)
