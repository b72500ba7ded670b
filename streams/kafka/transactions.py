"""The transactions of one batch, fed while the engine is still deciding.

Each task that consumed records opens its transaction before the engine runs, with the consumed offsets, so
adding the partitions its previous transaction wrote runs while the engine decides, as do the group offsets'
round trips (AddOffsetsToTxn, TxnOffsetCommit) in the transactions that carry them (a task's first, then one per
`KafkaSettings.group_offsets_interval_ms`); any other task's opens with the first record bound to it. Records
stream in as the runtime hands them over (once the group's offsets, if the transaction carries them, are in),
and a task commits as soon as the runtime says its outputs are complete (or at the end of the batch), while
later tasks are still being decided: the commit waits only for the last records and EndTxn. A read_committed
deployer sees each task's part of a batch at once; it reads the first tasks' decisions while the last are
computed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import IllegalOperation, KafkaError

from engine.runtime import OutputRecord
from streams.kafka.group_offsets import WRITER_HEADER, marked
from streams.kafka.task_offsets import encode_task_offsets, task_offsets_key
from streams.kafka.tasks import RecordSender, TaskProducers, add_partitions_early, retrieve_later
from streams.metrics import OutputTally
from topics.names import TopicRole

__all__ = ["TaskTransactions", "let_producers_send"]

log = logging.getLogger("placement.transactions")

Offsets = dict[TopicPartition, int]

TRANSACTION_FAILURES = (KafkaError, IllegalOperation)
"""What ends a task's transaction. A producer that learns of a fence while its batches are in flight ends the
transaction itself, and its next call raises IllegalOperation, which aiokafka does not derive from KafkaError."""


async def let_producers_send() -> None:
    """Give the producers' sender tasks their turns between two chunks of engine work.

    A handed-over batch needs three: the sender task drains it, the produce request task writes it, and the
    loop reads whatever acknowledgements arrived, which frees the partition for its next batch.
    """
    for _ in range(3):
        await asyncio.sleep(0)


@dataclass
class _Open:
    producer: AIOKafkaProducer
    sender: RecordSender
    transaction: AsyncExitStack
    tally: OutputTally = field(default_factory=OutputTally)
    offsets_recorded: bool = False
    """The consumed offsets are in the task's changelog record of this transaction."""
    offsets_sent: asyncio.Future[None] | None = None
    """The consumed offsets on their way into the group's offsets, once sent (not in every transaction)."""
    group_offsets_at: float | None = None
    """When the group's offsets were sent (`time.monotonic()`), if they were."""

    async def offsets_added(self) -> None:
        """Wait until the offsets sent are in the transaction, before any record of it is handed over.

        A partition leader checks each transactional produce with the transaction coordinator (KIP-890), which
        refuses while it is still writing AddOffsetsToTxn: the produce comes back NOT_ENOUGH_REPLICAS and waits
        out the retry backoff. With the broker's check turned off, the same runs saw no such retry.
        """
        if self.offsets_sent is not None:
            await self.offsets_sent


class TaskTransactions:
    """One batch's transactions, one per task. Kafka errors abort only the task they hit, never raise."""

    def __init__(
        self,
        tasks: TaskProducers,
        topic_of: Callable[[TopicRole], str],
        task_of: Callable[[str], int],
        group_id: str,
    ) -> None:
        self._tasks = tasks
        self._topic_of = topic_of
        self._task_of = task_of
        self._group_id = group_id
        self._owned = tasks.owned
        self._open: dict[int, _Open] = {}
        self._finishing: dict[int, asyncio.Future[OutputTally | None]] = {}
        """Tasks committing in the background since the runtime marked them finished."""
        self.failed: set[int] = set()
        """Tasks whose transaction was aborted; their state must be restored from Kafka."""
        self.errors: dict[int, Exception] = {}
        """The error that aborted each failed task's transaction."""
        self.committed: set[int] = set()
        """Tasks whose transaction committed."""
        self.group_offsets: set[int] = set()
        """Committed tasks whose transaction also committed the consumed offsets to the group."""
        self.loose: list[OutputRecord] = []
        """Records bound to no owned task, for the caller to send outside any transaction."""

    async def send(self, records: Iterable[OutputRecord]) -> None:
        """Route records to their task's transaction (opening it) and hand full batches to its producer."""
        by_task: dict[int, list[OutputRecord]] = {}
        for record in records:
            task = record.partition
            if task is None and record.subject is not None:
                task = self._task_of(record.subject)
            if task is None or task not in self._owned:
                self.loose.append(record)
            else:
                by_task.setdefault(task, []).append(record)
        for task, bound in by_task.items():
            if task in self.failed:
                continue
            try:
                opened = await self._opened(task)
                if opened is None:  # its background commit failed meanwhile
                    continue
                opened.tally.add(bound)
                await opened.offsets_added()
                await opened.sender.add(bound)
            except TRANSACTION_FAILURES as exc:
                await self._abort(task, exc)

    async def open(self, offsets: dict[int, Offsets]) -> None:
        """Begin the transaction of each owned task that consumed records, and send its offsets into it at once
        (called while the engine decides the batch)."""
        for task in sorted(offsets.keys() & self._owned - self.failed):
            try:
                opened = await self._opened(task)
                if opened is not None:
                    await self._send_offsets(task, opened, offsets[task])
            except TRANSACTION_FAILURES as exc:
                await self._abort(task, exc)

    def finish(self, task: int, offsets: Offsets) -> None:
        """The task's outputs of this batch are all sent: commit them with `offsets` in the background, while
        the engine decides the next tasks. A record for the task after this opens a new transaction."""
        if task not in self._owned or task in self.failed or task in self._finishing:
            return
        opened = self._open.pop(task, None)
        if opened is None and not offsets:
            return
        self._finishing[task] = asyncio.ensure_future(self._commit_task(task, opened, offsets))

    async def commit(self, offsets: dict[int, Offsets]) -> list[OutputTally]:
        """Wait for the tasks committing in the background, then commit each other task with its offsets (unless
        `open` sent them), task after task (committing them concurrently measured slower). Returns the tally of
        the records of each committed transaction."""
        committed: list[OutputTally | None] = []
        for task in sorted(self._finishing):
            committed.append(await self._finishing.pop(task))
        for task in sorted((set(self._open) | set(offsets)) & self._owned - self.failed):
            committed.append(await self._commit_task(task, self._open.pop(task, None), offsets.get(task, {})))
        return [tally for tally in committed if tally is not None]

    async def _commit_task(self, task: int, opened: _Open | None, offsets: Offsets) -> OutputTally | None:
        """Commit one task's transaction with its offsets; None when it was aborted instead."""
        try:
            if opened is None:
                opened = await self._begin(task)
            if offsets and not opened.offsets_recorded:
                await self._send_offsets(task, opened, offsets)
            await opened.offsets_added()
            await opened.sender.flush()
            await opened.transaction.aclose()
        except TRANSACTION_FAILURES as exc:
            await self._abort(task, exc, opened)
            return None
        self.committed.add(task)
        self._tasks.written[task] = frozenset(opened.sender.partitions)
        if opened.group_offsets_at is not None:
            self.group_offsets.add(task)
            self._tasks.group_offsets_sent(task, opened.group_offsets_at)
        return opened.tally

    async def _opened(self, task: int) -> _Open | None:
        """The task's open transaction, begun if need be; None once the task failed."""
        opened = self._open.get(task)
        if opened is None:
            committing = self._finishing.get(task)
            if committing is not None:  # one producer, one transaction at a time
                await asyncio.shield(committing)
            if task in self.failed:
                return None
            opened = self._open[task] = await self._begin(task)
        return opened

    async def _begin(self, task: int) -> _Open:
        producer = self._tasks.get(task)
        transaction = AsyncExitStack()
        await transaction.enter_async_context(producer.transaction())
        written = self._tasks.written.get(task)
        if written is None:
            written = await self._writable(producer, task)
        add_partitions_early(producer, written)
        return _Open(producer, RecordSender(producer, self._topic_of, self._task_of), transaction)

    async def _writable(self, producer: AIOKafkaProducer, task: int) -> frozenset[TopicPartition]:
        """Every partition a task's transaction can write: its own partition of each co-partitioned output topic
        and every dead-letter partition. The first transaction of a task's producer adds them all, so its markers
        close whatever an earlier producer of the task left open there when a broker lost its markers (see
        `RecordSender.flush`): a new owner, or the same one after a restart, does not know what that was."""
        dead_letter = self._topic_of(TopicRole.DEAD_LETTER)
        own = (TopicRole.DECISIONS, TopicRole.CHANGELOG, TopicRole.ADVISOR_REQUESTS)
        return frozenset(
            [TopicPartition(self._topic_of(role), task) for role in own]
            + [TopicPartition(dead_letter, p) for p in await producer.partitions_for(dead_letter)]
        )

    async def _send_offsets(self, task: int, opened: _Open, offsets: Offsets) -> None:
        """Put the consumed offsets into the transaction: into the task's changelog partition, with its other
        records (see task_offsets.py), and when due into the group's offsets, marked as this processor's
        (group_offsets.py; sent now, awaited before the task's first record and at the commit;
        `KafkaSettings.group_offsets_interval_ms`)."""
        value = encode_task_offsets(offsets)
        await opened.sender.add_pinned(TopicRole.CHANGELOG, task_offsets_key(task), value, task, [WRITER_HEADER])
        opened.offsets_recorded = True
        if not self._tasks.group_offsets_due(task):
            return
        opened.group_offsets_at = time.monotonic()
        sending = opened.producer.send_offsets_to_transaction(marked(offsets), self._group_id)
        opened.offsets_sent = asyncio.ensure_future(sending)

    async def _abort(self, task: int, error: Exception, opened: _Open | None = None) -> None:
        """Abort the task's transaction (aiokafka leaves a fenced one alone) and remember the task."""
        log.error(
            f"transaction failed ({type(error).__name__}); the task will be restored",
            extra={"task": task, "error": str(error)},
        )
        self.failed.add(task)
        self.errors[task] = error
        opened = self._open.pop(task, opened)
        if opened is None:
            return
        opened.sender.discard()
        if opened.offsets_sent is not None:
            retrieve_later(opened.offsets_sent)
        try:
            await opened.transaction.__aexit__(type(error), error, error.__traceback__)
        except TRANSACTION_FAILURES:
            log.exception("abort failed; restarting the task's producer fences the transaction", extra={"task": task})
