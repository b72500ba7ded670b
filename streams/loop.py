"""One batch, from poll to commit: the processing loop of a started service instance.

Read `run` top to bottom: poll the subject topics and read the inventory to its end; narrow a task that keeps
aborting to one record (the poison guard); under the batch lock, leave what a rebalance took meanwhile; run the
records through the runtime in the engine's worker thread (`_process`); send its hand-overs into one
transaction per task and commit each (`_publish`); restore every task whose transaction aborted, right there,
so its records are consumed again. Between batches restored tasks are re-decided a slice per turn
(`stale.py`), idle tasks' positions reach the group's offsets and the queue file is reloaded.

A rebalance can run between the poll and the batch (aiokafka calls the listener from its coordinator task); the
batch lock keeps them apart, and the assignment generation tells the loop to leave what it polled meanwhile
unprocessed. The runtime runs in a worker thread, so however long one batch takes, the event loop keeps
heartbeating to the group and answering the probes.
"""

from __future__ import annotations

import functools
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from aiokafka import ConsumerRecord
from aiokafka.errors import KafkaError

from engine.runtime import Handover, InputRecord, OutputRecord, Runtime
from streams.consumed import Records, input_records, unpoll, utcnow, without_processed
from streams.context import ShellClients, ShellContext
from streams.kafka.assignment import TaskOwnership
from streams.kafka.commits import GROUP_COMMIT_TIMEOUT_SECONDS, Offsets, TaskCommits
from streams.kafka.tasks import send_records
from streams.kafka.top_up import top_up
from streams.kafka.transactions import TaskTransactions, let_producers_send
from streams.queueconfig import QueueConfigFile

__all__ = ["ProcessingLoop"]

log = logging.getLogger("placement.service")

Inventory = list[ConsumerRecord[bytes, bytes]]


@dataclass
class Polled:
    """What one turn of the loop fetched."""

    generation: int
    """The assignment the records were polled under."""
    subjects: Records
    inventory: Inventory
    stale: frozenset[int]
    """Restored tasks to re-decide, restored before the inventory was read to its end."""


class ProcessingLoop:
    """The loop of one started service instance."""

    def __init__(
        self,
        ctx: ShellContext,
        clients: ShellClients,
        runtime: Runtime,
        *,
        ownership: TaskOwnership,
        commits: TaskCommits,
        queue_file: QueueConfigFile | None,
    ) -> None:
        self._ctx = ctx
        self._clients = clients
        self.runtime = runtime
        self._ownership = ownership
        self._commits = commits
        self._queue_file = queue_file
        self._next_reload = self._next_probe = 0.0

    async def run(self) -> None:
        """Poll, read the inventory to its end, process and commit, until a stop is requested."""
        ctx, peers = self._ctx, self._clients.peers
        max_records = ctx.settings.kafka.max_batch_records
        while not ctx.stop.is_set():
            polled = await self._poll()
            if polled is None:
                continue  # the broker did not answer: the records are fetched again
            polled.subjects = self._narrow(polled.subjects)
            from_peers = await peers.poll(max_records)
            if ctx.stop.is_set() and polled.subjects:
                break  # not processed: the offsets stay uncommitted and the next owner reads them again
            clock = time.monotonic()
            async with ctx.batch_lock:
                subjects = self._still_owned(polled)
                owned = ctx.tasks.owned
                peers.apply(from_peers, owned)
                await self._process(polled.inventory, {tp: rs for tp, rs in subjects.items() if tp.partition in owned})
                await self._between_batches(polled, owned, clock)
            await self._probe(clock)

    # --- 1. poll ------------------------------------------------------------------------------------
    async def _poll(self) -> Polled | None:
        """Poll the subject topics, then read the inventory tables to their end and top the batch up to the
        subject partitions' ends (P7); None when the broker did not answer, the records left to be fetched
        again and the inventory read kept for the next batch."""
        ctx, consumer, barrier = self._ctx, self._clients.consumer, self._clients.barrier
        kafka, ownership, observer = ctx.settings.kafka, self._ownership, ctx.observer
        wait_ms = kafka.poll_timeout_ms
        due = self.runtime.next_timer()
        if ownership.stale and observer.broker_reachable:  # the next slice waits only for the inventory
            wait_ms = 0
        elif due is not None:
            wait_ms = max(0, min(wait_ms, int((due - utcnow()).total_seconds() * 1000) + 1))
        observer.progressed()
        generation = ownership.generation
        subjects = await consumer.getmany(timeout_ms=wait_ms, max_records=kafka.max_batch_records)
        stale = ownership.stale.tasks()  # restored before the inventory is read to its end below
        inventory: Inventory = []
        try:
            polled = any(subjects.values())
            to_end = bool(stale) or polled
            started = time.perf_counter()
            wanted = sorted(consumer.assignment()) if polled else []
            inventory, ends = await barrier.read(to_end=to_end, max_records=kafka.max_batch_records, subjects=wanted)
            if to_end:
                observer.stage("inventory", time.perf_counter() - started)
            if ends:
                started = time.perf_counter()
                subjects = await top_up(consumer, subjects, ends, max_records=kafka.max_batch_records)
                observer.stage("top_up", time.perf_counter() - started)
        except (TimeoutError, KafkaError) as exc:
            # the batch waits: its records are fetched again once the tables can be read to their end, and the
            # inventory it read goes with the next batch (the tables' reader is past it)
            observer.broker(False, exc)
            barrier.give_back(inventory)
            unpoll(consumer, subjects, {})
            return None
        observer.polled(subjects)
        return Polled(generation, subjects, inventory, stale)

    # --- 2. poison narrowing ------------------------------------------------------------------------
    def _narrow(self, subjects: Records) -> Records:
        """A task whose transaction recently aborted gets one record at a time; the consumer goes back for the
        rest."""
        subjects, rewind = self._ctx.guard.narrow(subjects)
        for tp, offset in rewind:
            self._clients.consumer.seek(tp, offset)
        return subjects

    # --- 3. under the batch lock: what is still this instance's ------------------------------------
    def _still_owned(self, polled: Polled) -> Records:
        """The polled records this instance may process: none if a rebalance ran since the poll, and none it
        committed already."""
        ownership, subjects = self._ownership, polled.subjects
        if polled.generation != ownership.generation:
            # polled while an assignment was taken: fetched before it positioned the tasks (processing could run
            # a committed batch twice) or after (dropping would lose them), so none is processed
            unpoll(self._clients.consumer, subjects, ownership.positioned)
            subjects = {}
        subjects, dropped = without_processed(subjects, ownership.consumed_positions())
        for tp, count in dropped.items():
            log.warning(
                "records this instance had committed were fetched again; not decided twice",
                extra={"partition": str(tp), "records": count},
            )
        return subjects

    # --- 4. the runtime -----------------------------------------------------------------------------
    async def _process(self, inventory: Inventory, subjects: Records) -> None:
        """Apply the inventory records and the owned tasks' subject records, fire due timers, and commit each
        task's outputs with its consumed offsets."""
        ctx, runtime = self._ctx, self.runtime
        offsets: Offsets = {}
        for tp, batch in subjects.items():
            if batch:
                offsets.setdefault(tp.partition, {})[tp] = batch[-1].offset + 1
        doomed, doomed_tasks = ctx.guard.dead_letters(subjects, self._inputs)
        records = inventory + [r for tp, b in subjects.items() if tp.partition not in doomed_tasks for r in b]
        now = utcnow()
        by_topic = Counter(record.topic for record in records)
        ctx.observer.batch_started(by_topic)
        chunks: Iterator[Handover] = iter([Handover(doomed)] if doomed else [])
        spans = None
        if records:
            inputs = self._inputs(records)
            if ctx.observer.tracing is not None:
                spans = ctx.observer.tracing.start(inputs)
                inputs = spans.inputs
            processed = runtime.process_chunks(inputs, now, defer_costly=True)
            chunks = itertools.chain(chunks, processed if spans is None else spans.watch(processed))
        aborted = await self._publish(itertools.chain(chunks, runtime.fire_timer_chunks(now)), offsets)
        if spans is not None:
            spans.committed(aborted)
        ctx.observer.batch_done(by_topic, subjects, runtime)

    def _inputs(self, records: Iterable[ConsumerRecord[bytes, bytes]]) -> list[InputRecord]:
        return input_records(records, self._ctx.roles)

    # --- 5. publish in per-task transactions, 6. commit or restore ---------------------------------
    async def _publish(self, chunks: Iterable[Handover], offsets: Offsets) -> list[int]:
        """Commit each task's records and offsets atomically, and restore from Kafka each task whose transaction
        was aborted (its records are consumed again); returns those tasks. The chunks are always exhausted: the
        runtime's state moves on with them."""
        ctx, observer = self._ctx, self._ctx.observer
        transactions = ctx.transactions()
        decided = self.runtime.decided_subjects
        pending = dict(offsets)
        take = functools.partial(next, iter(chunks), None)
        coming = ctx.engine_thread.start(take)  # the engine decides while the transactions open
        await transactions.open(offsets)
        engine, sending, handed_over = await self._hand_over(take, coming, transactions, pending)
        observer.batch_decided(self.runtime.decided_subjects - decided, engine, handed_over)
        started = time.perf_counter()
        tallies = await transactions.commit(pending)
        if offsets:  # a batch of consumed records, not a timer or re-decision
            observer.stage("engine", engine)
            observer.stage("send", sending)
            observer.stage("commit", time.perf_counter() - started)
        for tally in tallies:
            observer.transaction_committed(tally)
        aborted = self._commits.settle(transactions, offsets)
        await self._send_loose(transactions.loose)
        for task in aborted:
            await self._ownership.take_task(task)
        return aborted

    async def _hand_over(
        self,
        take: Callable[[], Handover | None],
        coming: Future[Handover | None],
        transactions: TaskTransactions,
        pending: Offsets,
    ) -> tuple[float, float, int]:
        """Pull the runtime's hand-overs from the worker thread into the transactions; a task the runtime
        finished commits in the background with its offsets (taken from `pending`) while later tasks are
        decided. Returns the seconds waited for the engine, the seconds spent sending, and the hand-overs."""
        thread, observer = self._ctx.engine_thread, self._ctx.observer
        engine = sending = 0.0
        handed_over = 0
        while True:
            started = time.perf_counter()
            chunk = await thread.result(coming)
            handed_at = time.perf_counter()
            engine += handed_at - started
            if chunk is None:
                return engine, sending, handed_over
            # the engine decides the next hand-over while this one is sent: a full partition's batch waits for
            # its predecessor's produce request, and the engine need not wait with it
            coming = thread.start(take)
            handed_over += 1
            observer.progressed()
            await transactions.send(chunk.records)
            if chunk.finished is not None:
                transactions.finish(chunk.finished, pending.pop(chunk.finished, {}))
            await let_producers_send()
            sending += time.perf_counter() - handed_at

    async def _send_loose(self, records: list[OutputRecord]) -> None:
        """Records bound to no owned task go out on the loose producer."""
        if records:
            await send_records(self._clients.loose, records, self._ctx.topic_of, self._ctx.keys.task_of)
            self._ctx.observer.loose_sent(records)

    # --- between batches ----------------------------------------------------------------------------
    async def _between_batches(self, polled: Polled, owned: frozenset[int], clock: float) -> None:
        """Re-decide a slice of the restored tasks (and of the costly subjects a batch left undecided), bring idle
        tasks' positions into the group's offsets, and reload the queue file when due (the batch lock held)."""
        ctx, ownership = self._ctx, self._ownership
        for task, keys in self.runtime.deferred_keys().items():  # costly: decided after the next poll (platform P15)
            ownership.stale.defer(task, keys)
        if polled.stale and polled.generation == ownership.generation:  # else a task may have been restored again
            ownership.stale.keep(owned)
            keys = ownership.stale.take(polled.stale, ctx.settings.kafka.max_batch_records)
            await self._publish(self.runtime.redecide_chunks(keys, utcnow()), {})
        if ctx.observer.broker_reachable:  # an idle task's positions reach the group's offsets too
            await self._commits.commit_group_offsets(
                self._clients.consumer, GROUP_COMMIT_TIMEOUT_SECONDS, all_behind=False
            )
        if self._queue_file is not None and clock >= self._next_reload:
            self._next_reload = clock + ctx.settings.queue_config_poll_seconds
            await self._reload_queue_config(self._queue_file)

    async def _probe(self, clock: float) -> None:
        """Once a second: whether the broker answers, and the consumer's lag."""
        if clock < self._next_probe:
            return
        self._next_probe = clock + 1.0
        observer = self._ctx.observer
        try:
            await self._clients.barrier.probe()
            observer.broker(True)
        except (TimeoutError, KafkaError) as exc:
            observer.broker(False, exc)
        observer.lag(self._clients.consumer, self._ownership.consumed_positions())

    async def _reload_queue_config(self, queue_file: QueueConfigFile) -> None:
        reload, outputs = queue_file.apply_changes(self.runtime, utcnow())
        if reload is None:
            return
        if reload.error is not None:
            log.error("queue configuration rejected", extra={"path": str(queue_file.path), "error": reload.error})
        else:
            log.info("queue configuration reloaded", extra={"sha256": reload.sha256})
        await self._publish([Handover(outputs)], {})
