"""What the task transactions committed: each subject partition's committed position, the positions the
group's offsets still lack, and the poison and health bookkeeping of each transaction's outcome.

After a rebalance the group's committed offsets can lag a committed transaction until its markers are written
(the client cannot ask for stable offsets), so a task kept across a rebalance is positioned at what this
instance knows it committed (`committed`), and the loop brings the group's offsets up to it (`group_behind`).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from streams.context import ShellContext
from streams.kafka.group_offsets import marked
from streams.kafka.transactions import TaskTransactions

__all__ = ["GROUP_COMMIT_TIMEOUT_SECONDS", "Offsets", "TaskCommits"]

Offsets = dict[int, dict[TopicPartition, int]]
"""Consumed positions by task."""

log = logging.getLogger("placement.service")

GROUP_COMMIT_TIMEOUT_SECONDS = 1.0
"""Longest a group commit outside a transaction may take: the loop's, for idle tasks' offsets (one request, at
most once per interval), and a revoke's, for every owned task's (the rebalance waits for it)."""


class TaskCommits:
    """The committed positions of the owned tasks, and the outcome of each batch's transactions."""

    def __init__(self, ctx: ShellContext) -> None:
        self._ctx = ctx
        self.committed: dict[TopicPartition, int] = {}
        """The consumed position each subject partition's last committed transaction recorded."""
        self.group_behind: set[TopicPartition] = set()
        """Subject partitions whose last committed position went only into the task's changelog record (or that
        a task taken over found the group's offsets behind, TaskOwnership)."""

    def settle(self, transactions: TaskTransactions, offsets: Offsets) -> list[int]:
        """Take note of a batch's committed and aborted transactions; returns the aborted tasks, whose state must
        be restored from Kafka (the poison guard narrows their next batches)."""
        observer, guard = self._ctx.observer, self._ctx.guard
        positions = {tp: offset for task_offsets in offsets.values() for tp, offset in task_offsets.items()}
        for task in transactions.committed:
            observer.task_committed(task)
            guard.committed(task, positions)
        for tp, at in positions.items():
            if tp.partition in transactions.committed:
                self.committed[tp] = at
                if tp.partition in transactions.group_offsets:
                    self.group_behind.discard(tp)
                else:
                    self.group_behind.add(tp)
        for task, error in sorted(transactions.errors.items()):
            observer.task_aborted(task)
            guard.aborted(task, error, {tp: at for tp, at in positions.items() if tp.partition == task})
        return sorted(transactions.errors)

    async def record_positions(self, offsets: Offsets) -> list[int]:
        """Commit consumed positions alone (a reset of the group's offsets, honoured); returns the tasks whose
        transaction was aborted."""
        transactions = self._ctx.transactions()
        for tally in await transactions.commit(offsets):
            self._ctx.observer.transaction_committed(tally)
        return self.settle(transactions, offsets)

    def forget(self, tp: TopicPartition) -> None:
        """A task is taken (again): what this instance committed there before no longer counts."""
        self.committed.pop(tp, None)
        self.group_behind.discard(tp)

    def behind(self, tp: TopicPartition, offset: int) -> None:
        """A task taken over found the group's offset behind its last transaction's position `offset`."""
        self.committed[tp] = offset
        self.group_behind.add(tp)

    async def commit_group_offsets(self, consumer: AIOKafkaConsumer, timeout: float, *, all_behind: bool) -> None:
        """Commit to the group the positions that transactions recorded only in the changelog: those of tasks
        due a group commit (`TaskProducers.group_offsets_due`), which no transaction brings while a task is
        idle, or with `all_behind` every one (a graceful stop). Outside a transaction: they are committed
        already, and the group's offsets are only a lower bound of where a new owner starts."""
        tasks = self._ctx.tasks
        assigned = consumer.assignment()
        behind = {
            tp: self.committed[tp]
            for tp in self.group_behind
            if tp in assigned and tp in self.committed and (all_behind or tasks.group_offsets_due(tp.partition))
        }
        if not behind:
            return
        for task in {tp.partition for tp in behind}:  # tried again after an interval, whatever comes of it
            tasks.group_offsets_sent(task, time.monotonic())
        try:
            await asyncio.wait_for(consumer.commit(marked(behind)), timeout)
        except (KafkaError, TimeoutError) as exc:
            log.warning("the group's offsets were not brought up to date", extra={"error": repr(exc)})
            return
        self.group_behind.difference_update(behind)
