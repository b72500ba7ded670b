"""The transactions of one batch, fed while the engine is still deciding.

Each task's transaction opens with the first record bound to it, records stream into it as the runtime hands
them over, and at the end it takes the task's consumed offsets and commits. A read_committed deployer still
sees a batch all at once; what is gained is that sending overlaps deciding instead of following it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from engine.runtime import OutputRecord
from streams.kafka.tasks import RecordSender, TaskProducers
from streams.metrics import OutputTally
from topics.names import TopicRole

__all__ = ["TaskTransactions", "let_producers_send"]

log = logging.getLogger("placement.transactions")

Offsets = dict[TopicPartition, int]


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
        self.failed: set[int] = set()
        """Tasks whose transaction was aborted; their state must be restored from Kafka."""
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
                opened.tally.add(bound)
                await opened.sender.add(bound)
            except KafkaError as exc:
                await self._abort(task, exc)

    async def commit(self, offsets: dict[int, Offsets]) -> dict[int, OutputTally]:
        """Add each task's offsets, wait for its records and commit, task after task (committing them
        concurrently measured slower). Returns the tally of the committed records per task."""
        committed: dict[int, OutputTally] = {}
        for task in sorted((set(self._open) | set(offsets)) & self._owned - self.failed):
            try:
                opened = await self._opened(task)
                if offsets.get(task):
                    await opened.producer.send_offsets_to_transaction(offsets[task], self._group_id)
                await opened.sender.flush()
                del self._open[task]
                await opened.transaction.aclose()
            except KafkaError as exc:
                await self._abort(task, exc)
                continue
            committed[task] = opened.tally
        return committed

    async def _opened(self, task: int) -> _Open:
        opened = self._open.get(task)
        if opened is None:
            producer = self._tasks.get(task)
            transaction = AsyncExitStack()
            await transaction.enter_async_context(producer.transaction())
            sender = RecordSender(producer, self._topic_of, self._task_of)
            opened = self._open[task] = _Open(producer, sender, transaction)
        return opened

    async def _abort(self, task: int, error: KafkaError) -> None:
        """Abort the task's transaction (aiokafka leaves a fenced one alone) and remember the task."""
        log.error("transaction failed; the task will be restored from Kafka", extra={"task": task, "error": str(error)})
        self.failed.add(task)
        opened = self._open.pop(task, None)
        if opened is None:
            return
        try:
            await opened.transaction.__aexit__(type(error), error, error.__traceback__)
        except KafkaError:
            log.exception("abort failed; restarting the task's producer fences the transaction", extra={"task": task})
