"""The Kafka processor: global tables, the consumer group, per-task transactions, timers and reloads.

Per batch: consumed inventory and subject records go through the pure Runtime, and each task's outputs,
changelog entries and consumed offsets are committed in one transaction of that task's producer. The outputs
are sent into the open transactions chunk by chunk while the runtime is still deciding. The runtime runs in a
worker thread, so however long one batch takes, the event loop keeps heartbeating to the group and answering
the health probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from engine.core import SubjectEngine
from engine.registry import build_engines
from engine.runtime import Handover, InputRecord, Runtime
from streams.health import Health
from streams.http import HealthServer
from streams.kafka.admin import setup_topics
from streams.kafka.assignment import TaskOwnership
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.clients import group_consumer, loose_producer
from streams.kafka.peers import PeerChangelog
from streams.kafka.poison import PoisonGuard
from streams.kafka.stopping import CLIENT_STOP_SECONDS, bounded_stop
from streams.kafka.tables import new_reader
from streams.kafka.tasks import TaskProducers, partition_of
from streams.memory import tune_garbage_collector
from streams.metrics import Metrics
from streams.publisher import Publisher
from streams.queueconfig import QueueConfigFile
from streams.settings import Settings

__all__ = ["Processor"]

log = logging.getLogger("placement.service")

_Records = dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]
_Client = TypeVar("_Client")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Processor:
    """One service instance. `run()` until `request_stop()`; ready once tables and tasks are restored."""

    def __init__(
        self, settings: Settings, *, engines: list[SubjectEngine[Any]] | None = None, metrics: Metrics | None = None
    ) -> None:
        self.settings = settings
        self.metrics = metrics or Metrics()
        self._engines = engines
        self._names = settings.topics
        self._roles = settings.topics.roles()
        self._subject_topics = [self._names.submissions, self._names.advisor_recommendations]
        self._stop = asyncio.Event()
        self.batch_lock = asyncio.Lock()
        """Held while a batch or an assignment change runs: aiokafka calls the rebalance listener from its
        coordinator task, concurrently with the poll loop, and one producer must never open two transactions."""
        self.health = Health(self.metrics, settings.liveness_timeout_seconds)
        self._guard = PoisonGuard(settings.max_task_aborts)
        self._barrier: InventoryBarrier | None = None
        self.partitions = settings.kafka.task_partitions
        self._tasks_by_subject: dict[str, int] = {}
        self.runtime: Runtime | None = None
        self.http_port: int | None = None
        self.batches_done = 0
        self.records_done = 0
        """Batches processed and committed; lets tests and benchmarks wait for progress."""
        self.first_batch_at: float | None = None
        self.last_commit_at = 0.0
        """`time.perf_counter()` when the first batch with records arrived and when the last one committed, so
        benchmarks time the consume-process-commit loop the way the pass-through ceiling is timed."""
        self._queue_file = QueueConfigFile(settings.queue_config) if settings.queue_config else None
        self._queue_config: Any = self._queue_file.load_initial() if self._queue_file else None
        kafka = settings.kafka
        self._tasks = TaskProducers(kafka)
        self._publisher = Publisher(
            self._tasks,
            self._names.name,
            self._task_of,
            settings.kafka.group_id,
            metrics=self.metrics,
            health=self.health,
            guard=self._guard,
        )
        self._consumer: AIOKafkaConsumer | None = None
        self._restorer: AIOKafkaConsumer | None = None
        self._peers: PeerChangelog | None = None
        self._loose: AIOKafkaProducer | None = None
        self._ownership: TaskOwnership | None = None

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Global tables caught up, group joined, every assigned task restored, not stopping."""
        return self.health.ready()

    @property
    def owned_tasks(self) -> frozenset[int]:
        """The task partitions this instance owns now, each restored (a task being taken over counts once its
        state is back)."""
        return frozenset() if self._ownership is None else self._ownership.assigned

    def request_stop(self) -> None:
        """Signal-safe: finish the current batch, then shut down; not ready from now on."""
        self.health.stopping = True
        self._stop.set()

    async def stop_requested(self) -> None:
        """Returns once a stop was requested."""
        await self._stop.wait()

    async def run(self) -> None:
        """Set up, catch up, join the group and process until stopped. A stop ends the batch in flight after the
        stop grace (uncommitted, it is processed again by the next owner) and whatever set-up step is waiting."""
        http = HealthServer(
            self.metrics, self.health.alive, lambda: self.ready, self._explain, self.settings.explain_bearer()
        )
        work = asyncio.create_task(self._work(http))
        stop = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                self.health.stopping = True
                done, _ = await asyncio.wait({work}, timeout=self.settings.stop_grace_seconds)
                if not done:
                    log.warning("stopping: the batch in flight is abandoned; its records are processed again")
                    work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
        except BaseException:
            self.health.crashed = True
            raise
        finally:
            stop.cancel()
            self.health.stopping = True
            self.metrics.ready.set(0)
            await self._shutdown(http)

    async def _work(self, http: HealthServer) -> None:
        kafka = self.settings.kafka
        tune_garbage_collector(self.settings.gc_threshold)
        if self.settings.http_port:  # probes answer (not ready) while the broker is still out of reach
            self.http_port = await http.start(self.settings.http_host, self.settings.http_port)
        counts = await setup_topics(self.settings, self.health.note_broker)
        self.partitions = counts[self._names.submissions]
        self._tasks_by_subject.clear()
        self.runtime = Runtime(
            self._engines or build_engines(),
            self.settings.engine_settings(),
            self._queue_config,
            dead_letter_inventory=False,
            task_of=self._task_of,
        )
        self._loose = self._publisher.loose = loose_producer(kafka)
        await self._loose.start()
        await self._catch_up_tables()
        await self._start_peers()
        # restores assign and seek often, and each waits for a fetch in flight: keep fetches short
        self._restorer = new_reader(kafka, f"{kafka.client_id}-restore", fetch_max_wait_ms=20)
        await self._restorer.start()
        self._consumer = group_consumer(kafka)
        await self._consumer.start()
        self._ownership = TaskOwnership(
            runtime=self._require_runtime(),
            tasks=self._tasks,
            committed=self._publisher.committed,
            consumer=self._consumer,
            restorer=_started(self._restorer),
            peers=_started(self._peers),
            subject_topics=self._subject_topics,
            changelog_topic=self._names.changelog,
            task_of=self._task_of,
            metrics=self.metrics,
            health=self.health,
            batch_lock=self.batch_lock,
            stopping=self._stop,
            session_timeout_seconds=kafka.session_timeout_ms / 1000,
        )
        self._consumer.subscribe(self._subject_topics, listener=self._ownership.listener())
        await self._loop()

    async def _catch_up_tables(self) -> None:
        started, runtime = time.perf_counter(), self._require_runtime()

        async def apply(chunk: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
            # no subject is owned yet, so nothing is published; bad records are dead-lettered live only
            await asyncio.to_thread(runtime.process, self._inputs(chunk), _utcnow())
            self.health.progressed()

        inventory_topics = (self._names.cluster_status, self._names.taints)
        self._barrier, count = await InventoryBarrier.catch_up(self.settings.kafka, inventory_topics, apply)
        self.metrics.restore_seconds.labels("inventory").set(time.perf_counter() - started)
        log.info("global tables caught up", extra={"records": count, "seconds": time.perf_counter() - started})

    async def _start_peers(self) -> None:
        kafka, runtime = self.settings.kafka, self._require_runtime()
        self._peers = PeerChangelog(
            kafka,
            f"{kafka.client_id}-peers",
            self._names.changelog,
            self.partitions,
            runtime.observe_peer,
        )
        await self._peers.start()

    async def _shutdown(self, http: HealthServer) -> None:
        """Stop every client concurrently, each within a bound: with the broker gone, a client's stop can wait
        for ever, and the whole stop must stay within about two seconds."""
        stops = [
            lambda: self._tasks.stop_all(CLIENT_STOP_SECONDS * 0.8),
            *(c.stop for c in (self._consumer, self._barrier, self._restorer, self._loose, self._peers) if c),
            http.stop,
        ]
        await asyncio.gather(*(bounded_stop(stop) for stop in stops))

    def _task_of(self, subject: str) -> int:
        """The task (partition) owning a subject; cached, as murmur2 is pure Python in aiokafka."""
        task = self._tasks_by_subject.get(subject)
        if task is None:
            task = self._tasks_by_subject[subject] = partition_of(subject, self.partitions)
        return task

    # --- the loop ---------------------------------------------------------------------------------
    async def _loop(self) -> None:
        consumer, barrier, peers = _started(self._consumer), _started(self._barrier), _started(self._peers)
        ownership = _started(self._ownership)
        runtime = self._require_runtime()
        kafka = self.settings.kafka
        next_reload = next_lag = 0.0
        while not self._stop.is_set():
            wait_ms = kafka.poll_timeout_ms
            due = runtime.next_timer()
            if due is not None:
                wait_ms = max(0, min(wait_ms, int((due - _utcnow()).total_seconds() * 1000) + 1))
            self.health.progressed()
            generation = ownership.generation
            subjects = await consumer.getmany(timeout_ms=wait_ms, max_records=kafka.max_batch_records)
            self._observe_queued(subjects)
            subjects, rewind = self._guard.narrow(subjects)
            for tp, offset in rewind:
                consumer.seek(tp, offset)
            stale = set(ownership.stale)
            try:
                to_end = bool(stale) or any(subjects.values())
                started = time.perf_counter()
                inventory = await barrier.read(to_end=to_end, max_records=kafka.max_batch_records)
                if to_end:
                    self.metrics.batch_stage.labels("inventory").observe(time.perf_counter() - started)
            except (TimeoutError, KafkaError) as exc:
                # the batch waits: its records are fetched again once the tables can be read to their end
                self.health.note_broker(False, exc)
                self._unpoll(consumer, subjects, {})
                continue
            from_peers = await peers.poll(kafka.max_batch_records)
            if self._stop.is_set() and subjects:
                # not processed: the offsets stay uncommitted and the next owner reads them again
                break
            clock = time.monotonic()
            async with self.batch_lock:
                # a rebalance may have taken partitions since the poll: their records belong to the new owner
                if generation != ownership.generation:
                    # polled while an assignment was taken: fetched before it positioned the tasks (processing
                    # could run a committed batch twice) or after (dropping would lose them), so none is processed
                    self._unpoll(consumer, subjects, ownership.positioned)
                    subjects = {}
                owned = self._tasks.owned
                peers.apply(from_peers, owned)
                await self._handle(inventory, {tp: rs for tp, rs in subjects.items() if tp.partition in owned})
                if stale:
                    if generation == ownership.generation:  # else a task may have been restored again meanwhile
                        ownership.stale -= stale
                    keys = [key for task in sorted(stale & owned) for key in ownership.keys_of(task)]
                    await self._publish(runtime.redecide_chunks(keys, _utcnow()), {})
                if self._queue_file is not None and clock >= next_reload:
                    next_reload = clock + self.settings.queue_config_poll_seconds
                    await self._reload_queue_config()
            if clock >= next_lag:
                next_lag = clock + 1.0
                try:
                    await barrier.probe()
                    self.health.note_broker(True)
                except (TimeoutError, KafkaError) as exc:
                    self.health.note_broker(False, exc)
                await self.metrics.record_lag(consumer)

    def _observe_queued(self, subjects: _Records) -> None:
        """Per polled record, its timestamp to now: producing, the broker, fetching and waiting for the loop."""
        now_ms = time.time() * 1000
        queued = self.metrics.batch_stage.labels("queued")
        for records in subjects.values():
            for record in records:
                queued.observe(max(0.0, (now_ms - record.timestamp) / 1000))

    @staticmethod
    def _unpoll(consumer: AIOKafkaConsumer, subjects: _Records, to: dict[TopicPartition, int]) -> None:
        """Leave polled records unprocessed: each assigned partition goes back to `to`, else to its first polled
        record, so they are fetched again."""
        assigned = consumer.assignment()
        for tp, records in subjects.items():
            if records and tp in assigned:
                consumer.seek(tp, to.get(tp, records[0].offset))

    async def _handle(self, inventory: list[ConsumerRecord[bytes, bytes]], subjects: _Records) -> None:
        runtime = self._require_runtime()
        offsets: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        for tp, batch in subjects.items():
            if batch:
                offsets[tp.partition][tp] = batch[-1].offset + 1
        doomed, doomed_tasks = self._guard.dead_letters(subjects, self._inputs)
        records = inventory + [r for tp, b in subjects.items() if tp.partition not in doomed_tasks for r in b]
        now = _utcnow()
        if records and self.first_batch_at is None:
            self.first_batch_at = time.perf_counter()
        chunks: Iterator[Handover] = iter([Handover(doomed)] if doomed else [])
        if records:
            timed = self._publisher.engine_timed(runtime.process_chunks(self._inputs(records), now))
            chunks = itertools.chain(chunks, timed)
        by_topic = Counter(record.topic for record in records)
        for topic, count in by_topic.items():
            self.metrics.consumed.labels(topic).inc(count)
        await self._publish(itertools.chain(chunks, runtime.fire_timer_chunks(now)), offsets)
        for topic, count in by_topic.items():
            self.metrics.processed.labels(topic).inc(count)
        committed_at = time.time() * 1000
        for batch in subjects.values():
            for record in batch:
                self.metrics.event_age.observe(max(0.0, (committed_at - record.timestamp) / 1000))
        self.metrics.subjects.set(len(runtime.states))
        self.metrics.follow_engine_counters(runtime.counters())
        for incident in runtime.take_incidents():
            self.metrics.incidents.labels(incident.stage).inc()
            log.error(
                "isolated a failure",
                extra={"subject": incident.subject, "stage": incident.stage, "error": repr(incident.error)},
            )
        if records:
            self.batches_done += 1
            self.records_done += len(records)
            self.last_commit_at = time.perf_counter()

    def _inputs(self, records: Iterable[ConsumerRecord[bytes, bytes]]) -> list[InputRecord]:
        return [
            InputRecord(
                topic=self._roles[r.topic],
                partition=r.partition,
                offset=r.offset,
                key=r.key,
                value=r.value,
                timestamp=datetime.fromtimestamp(r.timestamp / 1000, UTC) if r.timestamp >= 0 else None,
                topic_name=r.topic,
            )
            for r in records
        ]

    async def _publish(self, chunks: Iterable[Handover], offsets: dict[int, dict[TopicPartition, int]]) -> None:
        """Publish a batch (see Publisher) and restore from Kafka each task whose transaction was aborted."""
        for task in await self._publisher.publish(self._require_runtime(), chunks, offsets):
            await _started(self._ownership).take_task(task)

    async def _reload_queue_config(self) -> None:
        assert self._queue_file is not None
        reload, outputs = self._queue_file.apply_changes(self._require_runtime(), _utcnow())
        if reload is None:
            return
        if reload.error is not None:
            log.error("queue configuration rejected", extra={"path": str(self._queue_file.path), "error": reload.error})
        else:
            log.info("queue configuration reloaded", extra={"sha256": reload.sha256})
        await self._publish([Handover(outputs)], {})

    def _explain(self, key: str) -> dict[str, Any] | None:
        runtime = self.runtime
        return None if runtime is None else runtime.explain(key, _utcnow())

    # --- helpers ----------------------------------------------------------------------------------
    def _require_runtime(self) -> Runtime:
        if self.runtime is None:
            raise RuntimeError("the processor is not started")
        return self.runtime


def _started(client: _Client | None) -> _Client:
    """A client that `run()` creates; None before that."""
    if client is None:
        raise RuntimeError("the processor is not started")
    return client
