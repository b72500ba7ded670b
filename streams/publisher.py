"""Publishing one batch: the runtime's hand-overs go into the tasks' transactions as they come, each task
commits with its consumed offsets, and what no task owns goes out on the loose producer.

The runtime runs in a worker thread (streams/engine_thread.py) while the event loop sends what it has handed
over, so the loop keeps heartbeating to the group and answering the health probes however long a batch takes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from engine.runtime import Handover, Runtime
from streams.engine_thread import EngineThread
from streams.health import Health
from streams.kafka.group_offsets import marked
from streams.kafka.poison import PoisonGuard
from streams.kafka.tasks import TaskProducers, send_records
from streams.kafka.transactions import TaskTransactions, let_producers_send
from streams.metrics import Metrics, OutputTally
from topics.names import TopicRole

__all__ = ["GROUP_COMMIT_TIMEOUT_SECONDS", "Publisher"]

Offsets = dict[int, dict[TopicPartition, int]]

log = logging.getLogger("placement.service")

GROUP_COMMIT_TIMEOUT_SECONDS = 1.0
"""Longest a group commit outside a transaction may take: the loop's, for idle tasks' offsets (one request, at
most once per interval), and a revoke's, for every owned task's (the rebalance waits for it)."""


class Publisher:
    """Commits batches task by task and keeps the health, poison and metrics bookkeeping of each outcome."""

    def __init__(
        self,
        tasks: TaskProducers,
        topic_of: Callable[[TopicRole], str],
        task_of: Callable[[str], int],
        group_id: str,
        *,
        metrics: Metrics,
        health: Health,
        guard: PoisonGuard,
        engine_thread: EngineThread,
    ) -> None:
        self._tasks = tasks
        self._topic_of = topic_of
        self._task_of = task_of
        self._group_id = group_id
        self._metrics = metrics
        self._health = health
        self._guard = guard
        self._engine_thread = engine_thread
        self.loose: AIOKafkaProducer | None = None
        """The non-transactional producer, once started."""
        self.committed: dict[TopicPartition, int] = {}
        """The consumed position each subject partition's last committed transaction recorded: after a
        rebalance the group's committed offsets can lag it until the transaction markers are written (the
        client cannot ask for stable offsets), so the caller seeks to what it knows it committed."""
        self.group_behind: set[TopicPartition] = set()
        """Subject partitions whose last committed position went only into the task's changelog record (or that
        a task taken over found the group's offsets behind, TaskOwnership)."""

    async def commit_group_offsets(self, consumer: AIOKafkaConsumer, timeout: float, *, all_behind: bool) -> None:
        """Commit to the group the positions that transactions recorded only in the changelog: those of tasks
        due a group commit (`TaskProducers.group_offsets_due`), which no transaction brings while a task is
        idle, or with `all_behind` every one (a graceful stop). Outside a transaction: they are committed
        already, and the group's offsets are only a lower bound of where a new owner starts."""
        assigned = consumer.assignment()
        behind = {
            tp: self.committed[tp]
            for tp in self.group_behind
            if tp in assigned and tp in self.committed and (all_behind or self._tasks.group_offsets_due(tp.partition))
        }
        if not behind:
            return
        for task in {tp.partition for tp in behind}:  # tried again after an interval, whatever comes of it
            self._tasks.group_offsets_sent(task, time.monotonic())
        try:
            await asyncio.wait_for(consumer.commit(marked(behind)), timeout)
        except (KafkaError, TimeoutError) as exc:
            log.warning("the group's offsets were not brought up to date", extra={"error": repr(exc)})
            return
        self.group_behind.difference_update(behind)

    async def publish(self, runtime: Runtime, chunks: Iterable[Handover], offsets: Offsets) -> list[int]:
        """Commit each task's records and offsets atomically; returns the tasks whose transaction was aborted,
        which the caller restores from Kafka. The chunks are always exhausted: the runtime's state moves on
        with them."""
        decided = runtime.decided_subjects
        transactions = TaskTransactions(self._tasks, self._topic_of, self._task_of, self._group_id)
        pending = dict(offsets)
        positions = {tp: offset for task_offsets in offsets.values() for tp, offset in task_offsets.items()}
        handed = iter(chunks)
        engine = sending = 0.0
        handed_over = 0
        take = functools.partial(next, handed, None)
        coming = self._engine_thread.start(take)
        await transactions.open(offsets)
        while True:
            started = time.perf_counter()
            chunk = await self._engine_thread.result(coming)
            handed_at = time.perf_counter()
            engine += handed_at - started
            if chunk is None:
                break
            # the engine decides the next hand-over while this one is sent: a full partition's batch waits for
            # its predecessor's produce request, and the engine need not wait with it
            coming = self._engine_thread.start(take)
            handed_over += 1
            self._health.progressed()
            await transactions.send(chunk.records)
            if chunk.finished is not None:
                transactions.finish(chunk.finished, pending.pop(chunk.finished, {}))
            await let_producers_send()
            sending += time.perf_counter() - handed_at
        self._metrics.decided.inc(runtime.decided_subjects - decided)
        if handed_over:
            self._metrics.decision_latency.observe(engine)
        started = time.perf_counter()
        tallies = await transactions.commit(pending)
        if offsets:  # a batch of consumed records, not a timer or re-decision
            stages = self._metrics.batch_stage
            stages.labels("engine").observe(engine)
            stages.labels("send").observe(sending)
            stages.labels("commit").observe(time.perf_counter() - started)
        for tally in tallies:
            self._metrics.transaction_committed(tally, self._topic_of)
        for task in transactions.committed:
            self._health.failing_tasks.discard(task)
            self._guard.committed(task, positions)
        for tp, at in positions.items():
            if tp.partition in transactions.committed:
                self.committed[tp] = at
                if tp.partition in transactions.group_offsets:
                    self.group_behind.discard(tp)
                else:
                    self.group_behind.add(tp)
        for task, error in sorted(transactions.errors.items()):
            self._metrics.transactions.labels("aborted").inc()
            self._health.failing_tasks.add(task)
            self._guard.aborted(task, error, {tp: at for tp, at in positions.items() if tp.partition == task})
        if transactions.loose:
            if self.loose is None:
                raise RuntimeError("records bound to no task before the loose producer started")
            await send_records(self.loose, transactions.loose, self._topic_of, self._task_of)
            loose = OutputTally()
            loose.add(transactions.loose)
            self._metrics.count_produced(loose, self._topic_of)
        return sorted(transactions.errors)
