"""Reading compacted topics to their end: global inventory tables, per-task changelog restore and the peers' part
of the changelog.

The catch-up target is the end offset captured first (the last stable offset under read_committed);
progress is measured by consumer position, since transaction markers leave offset gaps.

A changelog is read for its last entry per key (`read_latest`): the log cleaner never compacts a partition's
active segment (a week of writes under the broker's default `segment.ms`), so a restore meets every decision a
placement published since, and reading one back builds its pages, sets and conditions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from connection.security import connection_options
from engine.errors import InvalidStateError
from streams.kafka.group_offsets import written_by_this_version
from streams.kafka.task_offsets import TaskOffsetsError, decode_task_offsets, is_task_offsets_key
from streams.settings import KafkaSettings

__all__ = [
    "EntrySink",
    "RecordSink",
    "UnreadableEntries",
    "changelog_sink",
    "entry_kind",
    "new_reader",
    "read_latest",
    "read_to_end",
    "seek_to_start",
]

log = logging.getLogger("placement.tables")

RecordSink = Callable[[Sequence[ConsumerRecord[bytes, bytes]]], Awaitable[None] | None]
ReadProgress = Callable[[TopicPartition, int, int, int], None]
"""Told after each chunk read: the partition, the next offset to read, the end offset aimed at, records read."""

EntrySink = Callable[[str, bytes | None], None]
"""Applies one changelog entry (record key, value; None is a tombstone)."""


class UnreadableEntries:
    """Logs skipped changelog entries once per kind, not once per entry: a partition written by a newer version
    holds thousands of entries of a kind this one cannot read, and one line says all there is to say."""

    def __init__(self) -> None:
        self._logged: set[tuple[str, str]] = set()
        self.skipped: dict[str, int] = {}
        """Entries skipped so far, by kind."""

    def skip(self, what: str, record: ConsumerRecord[bytes, bytes], error: Exception) -> None:
        kind = entry_kind(record.key, record.value)
        self.skipped[kind] = self.skipped.get(kind, 0) + 1
        if (what, kind) in self._logged:
            return
        self._logged.add((what, kind))
        log.warning(
            f"skipping {what}s this version cannot read; further ones of this kind are skipped without a line",
            extra={"kind": kind, "topic": record.topic, "offset": record.offset, "error": str(error)},
        )


def entry_kind(key: bytes | None, value: bytes | None) -> str:
    """What kind of changelog entry a record is, as far as it can be told: the `kind` and `v` its value names,
    else its key's first segment."""
    if key is not None and is_task_offsets_key(key):
        return "task offsets"
    try:
        loaded = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError:
        loaded = None
    if isinstance(loaded, dict) and "kind" in loaded:
        return f"{str(loaded['kind'])[:40]} v{str(loaded.get('v'))[:10]}"
    head = (key or b"").split(b"/", 1)[0][:40]
    return f"key {head.decode(errors='replace')}/..."


def changelog_sink(
    apply: EntrySink,
    what: str,
    task_offsets: dict[TopicPartition, int] | None = None,
    *,
    legacy_offsets: dict[TopicPartition, set[int]] | None = None,
    unreadable: UnreadableEntries | None = None,
) -> RecordSink:
    """A sink applying each keyed subject entry; an unreadable entry is skipped (`UnreadableEntries`), so one bad
    entry costs only itself. The task offsets records (see task_offsets.py) are no subject's: they are gathered
    into `task_offsets` when given (the latest per partition wins), and the offsets of those written by 0.1.0
    into `legacy_offsets` (group_offsets.py), else skipped."""
    skipped = UnreadableEntries() if unreadable is None else unreadable

    def sink(records: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
        for record in records:
            if record.key is None:
                continue
            try:
                if not is_task_offsets_key(record.key):
                    apply(record.key.decode(), record.value)
                elif task_offsets is not None and record.value is not None:
                    offsets = decode_task_offsets(record.value)
                    task_offsets.update(offsets)
                    if legacy_offsets is not None and not written_by_this_version(record.headers):
                        for tp, offset in offsets.items():
                            legacy_offsets.setdefault(tp, set()).add(offset)
            except (InvalidStateError, UnicodeDecodeError, KeyError, TaskOffsetsError) as exc:
                skipped.skip(what, record, exc)

    return sink


async def read_latest(
    consumer: AIOKafkaConsumer,
    partitions: Sequence[TopicPartition],
    sink: RecordSink,
    *,
    timeout: float = 120.0,
    max_records: int = 5000,
    progress: ReadProgress | None = None,
) -> int:
    """`read_to_end` from the start, with only each key's last record going to `sink`, once every partition is
    read, in the order of those last records (see the module docstring); the task offsets records go through as
    they are read, as the latest readable one counts (task_offsets.py). A last entry that cannot be read leaves
    its key as if it held nothing, not as an older entry made it. Returns the count of records read."""
    latest: dict[tuple[int, bytes], ConsumerRecord[bytes, bytes]] = {}

    def keep(records: Sequence[ConsumerRecord[bytes, bytes]]) -> Awaitable[None] | None:
        through = []
        for record in records:
            if record.key is None or is_task_offsets_key(record.key):
                through.append(record)
                continue
            slot = (record.partition, record.key)
            latest.pop(slot, None)  # to the end: the order is that of the last records
            latest[slot] = record
        return sink(through) if through else None

    count = await read_to_end(consumer, partitions, keep, timeout=timeout, max_records=max_records, progress=progress)
    result = sink(list(latest.values())) if latest else None
    if result is not None:
        await result
    return count


def new_reader(
    kafka: KafkaSettings,
    client_id: str,
    *,
    fetch_max_wait_ms: int = 500,
    retry_backoff_ms: int = 100,
    max_partition_fetch_bytes: int = 1_048_576,
) -> AIOKafkaConsumer:
    """A group-less, read_committed consumer for manual assignment."""
    return AIOKafkaConsumer(
        **connection_options(kafka),
        client_id=client_id,
        fetch_max_wait_ms=fetch_max_wait_ms,
        retry_backoff_ms=retry_backoff_ms,
        max_partition_fetch_bytes=max_partition_fetch_bytes,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )


async def seek_to_start(consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition], timeout: float) -> None:
    """Position at the log start offsets. `seek_to_beginning` waits for the fetcher's next round, which can
    be a whole fetch wait (500 ms) per call; asking for the offsets and seeking to them returns at once."""
    start = await asyncio.wait_for(consumer.beginning_offsets(list(partitions)), timeout)
    for tp in partitions:
        consumer.seek(tp, start[tp])


async def read_to_end(
    consumer: AIOKafkaConsumer,
    partitions: Sequence[TopicPartition],
    sink: RecordSink,
    *,
    from_beginning: bool = True,
    timeout: float = 120.0,
    max_records: int = 5000,
    progress: ReadProgress | None = None,
) -> int:
    """Feed every record up to the end offsets captured now into `sink`; returns the record count."""
    if not partitions:
        return 0
    ends = consumer.end_offsets(list(partitions))
    if from_beginning:  # both offsets requests at once: each waits for the consumer's fetch in flight
        end, _ = await asyncio.wait_for(asyncio.gather(ends, seek_to_start(consumer, partitions, timeout)), timeout)
    else:
        end = await asyncio.wait_for(ends, timeout)
    count = 0
    pending = {tp for tp in partitions if end[tp] > 0}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while pending:
        for tp in list(pending):
            if await consumer.position(tp) >= end[tp]:
                pending.discard(tp)
        if not pending:
            break
        if loop.time() > deadline:
            raise TimeoutError(f"catching up {sorted(map(str, pending))} took longer than {timeout}s")
        batches = await consumer.getmany(*pending, timeout_ms=200, max_records=max_records)
        for tp, records in batches.items():
            chunk = [r for r in records if r.offset < end[tp]]
            if chunk:
                count += len(chunk)
                result = sink(chunk)
                if result is not None:
                    await result
                if progress is not None:
                    progress(tp, chunk[-1].offset + 1, end[tp], len(chunk))
            if len(chunk) < len(records):
                # records past the target belong to the live tail: rewind so they are read again later
                consumer.seek(tp, chunk[-1].offset + 1 if chunk else end[tp])
    return count
