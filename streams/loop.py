"""The processing loop: poll the subject topics, read the inventory to its end, process and commit, repeat.

A rebalance can run between the poll and the batch (aiokafka calls the listener from its coordinator task); the
batch lock keeps them apart, and the assignment generation tells the loop to leave what it polled meanwhile
unprocessed. Due timers shorten the poll; restored tasks are re-decided once the inventory is read to its end, a
slice per turn (`stale.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from engine.runtime import Handover
from streams.batches import BatchHandler, Records, observe_queued, utcnow, without_processed
from streams.health import Health
from streams.kafka.assignment import TaskOwnership
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.peers import PeerChangelog
from streams.kafka.poison import PoisonGuard
from streams.kafka.tasks import TaskProducers
from streams.kafka.top_up import top_up
from streams.metrics import Metrics
from streams.queueconfig import QueueConfigFile
from streams.settings import Settings

__all__ = ["ProcessingLoop"]

log = logging.getLogger("placement.service")


class ProcessingLoop:
    """The loop of one started service instance."""

    def __init__(
        self,
        *,
        settings: Settings,
        consumer: AIOKafkaConsumer,
        barrier: InventoryBarrier,
        peers: PeerChangelog,
        ownership: TaskOwnership,
        batches: BatchHandler,
        tasks: TaskProducers,
        guard: PoisonGuard,
        health: Health,
        metrics: Metrics,
        batch_lock: asyncio.Lock,
        stopping: asyncio.Event,
        queue_file: QueueConfigFile | None,
    ) -> None:
        self._settings = settings
        self._consumer = consumer
        self._barrier = barrier
        self._peers = peers
        self._ownership = ownership
        self._batches = batches
        self._tasks = tasks
        self._guard = guard
        self._health = health
        self._metrics = metrics
        self._batch_lock = batch_lock
        self._stopping = stopping
        self._queue_file = queue_file

    async def run(self) -> None:
        """Poll, read the inventory to its end, process and commit, until a stop is requested."""
        consumer, barrier, peers = self._consumer, self._barrier, self._peers
        ownership, batches, runtime = self._ownership, self._batches, self._batches.runtime
        kafka = self._settings.kafka
        next_reload = next_lag = 0.0
        while not self._stopping.is_set():
            wait_ms = kafka.poll_timeout_ms
            due = runtime.next_timer()
            if ownership.stale and self._health.broker_reachable:  # the next slice waits only for the inventory
                wait_ms = 0
            elif due is not None:
                wait_ms = max(0, min(wait_ms, int((due - utcnow()).total_seconds() * 1000) + 1))
            self._health.progressed()
            generation = ownership.generation
            subjects = await consumer.getmany(timeout_ms=wait_ms, max_records=kafka.max_batch_records)
            stale = ownership.stale.tasks()  # restored before the inventory is read to its end below
            inventory: list[ConsumerRecord[bytes, bytes]] = []
            try:
                polled = any(subjects.values())
                to_end = bool(stale) or polled
                started = time.perf_counter()
                wanted = sorted(consumer.assignment()) if polled else []
                inventory, ends = await barrier.read(
                    to_end=to_end, max_records=kafka.max_batch_records, subjects=wanted
                )
                if to_end:
                    self._metrics.batch_stage.labels("inventory").observe(time.perf_counter() - started)
                if ends:
                    started = time.perf_counter()
                    subjects = await top_up(consumer, subjects, ends, max_records=kafka.max_batch_records)
                    self._metrics.batch_stage.labels("top_up").observe(time.perf_counter() - started)
            except (TimeoutError, KafkaError) as exc:
                # the batch waits: its records are fetched again once the tables can be read to their end, and
                # the inventory it read goes with the next batch (the tables' reader is past it)
                self._health.note_broker(False, exc)
                barrier.give_back(inventory)
                self._unpoll(consumer, subjects, {})
                continue
            observe_queued(self._metrics, subjects)
            subjects, rewind = self._guard.narrow(subjects)
            for tp, offset in rewind:
                consumer.seek(tp, offset)
            from_peers = await peers.poll(kafka.max_batch_records)
            if self._stopping.is_set() and subjects:
                # not processed: the offsets stay uncommitted and the next owner reads them again
                break
            clock = time.monotonic()
            async with self._batch_lock:
                # a rebalance may have taken partitions since the poll: their records belong to the new owner
                if generation != ownership.generation:
                    # polled while an assignment was taken: fetched before it positioned the tasks (processing
                    # could run a committed batch twice) or after (dropping would lose them), so none is processed
                    self._unpoll(consumer, subjects, ownership.positioned)
                    subjects = {}
                subjects, dropped = without_processed(subjects, ownership.consumed_positions())
                for tp, count in dropped.items():
                    log.warning(
                        "records this instance had committed were fetched again; not decided twice",
                        extra={"partition": str(tp), "records": count},
                    )
                owned = self._tasks.owned
                peers.apply(from_peers, owned)
                await batches.handle(inventory, {tp: rs for tp, rs in subjects.items() if tp.partition in owned})
                for task, keys in runtime.deferred_keys().items():  # decided next turn, after what it polls
                    ownership.stale.defer(task, keys)
                if stale and generation == ownership.generation:  # else a task may have been restored again
                    ownership.stale.keep(owned)
                    keys = ownership.stale.take(stale, kafka.max_batch_records)
                    await batches.publish(runtime.redecide_chunks(keys, utcnow()), {})
                if self._health.broker_reachable:  # an idle task's positions reach the group's offsets too
                    await batches.commit_group_offsets(consumer)
                if self._queue_file is not None and clock >= next_reload:
                    next_reload = clock + self._settings.queue_config_poll_seconds
                    await self._reload_queue_config()
            if clock >= next_lag:
                next_lag = clock + 1.0
                try:
                    await barrier.probe()
                    self._health.note_broker(True)
                except (TimeoutError, KafkaError) as exc:
                    self._health.note_broker(False, exc)
                self._metrics.record_lag(consumer, ownership.consumed_positions())

    @staticmethod
    def _unpoll(consumer: AIOKafkaConsumer, subjects: Records, to: dict[TopicPartition, int]) -> None:
        """Leave polled records unprocessed: each assigned partition goes back to `to`, else to its first polled
        record, so they are fetched again."""
        assigned = consumer.assignment()
        for tp, records in subjects.items():
            if records and tp in assigned:
                consumer.seek(tp, to.get(tp, records[0].offset))

    async def _reload_queue_config(self) -> None:
        assert self._queue_file is not None
        reload, outputs = self._queue_file.apply_changes(self._batches.runtime, utcnow())
        if reload is None:
            return
        if reload.error is not None:
            log.error("queue configuration rejected", extra={"path": str(self._queue_file.path), "error": reload.error})
        else:
            log.info("queue configuration reloaded", extra={"sha256": reload.sha256})
        await self._batches.publish([Handover(outputs)], {})
