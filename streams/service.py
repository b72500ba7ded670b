"""The Kafka processor: global tables, the consumer group, per-task transactions, timers and reloads.

Per batch: consumed inventory and subject records go through the pure Runtime, and each task's outputs,
changelog entries and consumed offsets are committed in one transaction of that task's producer. The outputs
are sent into the open transactions chunk by chunk while the runtime is still deciding.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor

from engine.core import SubjectEngine
from engine.registry import build_engines
from engine.runtime import Handover, InputRecord, OutputRecord, Runtime
from streams.http import HealthServer
from streams.kafka.admin import ensure_topics
from streams.kafka.peers import PeerChangelog
from streams.kafka.retry import kafka_retrying
from streams.kafka.tables import changelog_sink, new_reader, read_to_end, seek_to_start
from streams.kafka.tasks import TaskProducers, partition_of, send_records
from streams.kafka.transactions import TaskTransactions, let_producers_send
from streams.memory import tune_garbage_collector
from streams.metrics import Metrics, OutputTally
from streams.queueconfig import QueueConfigFile
from streams.settings import Settings

__all__ = ["Processor"]

log = logging.getLogger("placement.service")

_Records = dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, processor: Processor) -> None:
        self._processor = processor

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """Wait for the batch in flight: its transaction commits before the partitions go."""
        async with self._processor.batch_lock:
            pass

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._processor.take_assignment(assigned)


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
        self._tables_ready = False
        self._assigned_once = False
        self._alive = True
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
        self._consumer: AIOKafkaConsumer | None = None
        self._tables: AIOKafkaConsumer | None = None
        self._restorer: AIOKafkaConsumer | None = None
        self._peers: PeerChangelog | None = None
        self._loose: AIOKafkaProducer | None = None

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Global tables caught up, group joined, every assigned task restored, not stopping."""
        return self._tables_ready and self._assigned_once and not self._stop.is_set()

    @property
    def owned_tasks(self) -> frozenset[int]:
        """The task partitions this instance owns now."""
        return self._tasks.owned

    def request_stop(self) -> None:
        """Signal-safe: finish the current batch, then shut down."""
        self._stop.set()

    async def stop_requested(self) -> None:
        """Returns once a stop was requested."""
        await self._stop.wait()

    async def run(self) -> None:
        """Set up, catch up, join the group and process until stopped."""
        kafka = self.settings.kafka
        tune_garbage_collector(self.settings.gc_threshold)
        http = HealthServer(self.metrics, lambda: self._alive, lambda: self.ready, self._explain)
        try:
            counts = await self._setup_topics()
            self.partitions = counts[self._names.submissions]
            self._tasks_by_subject.clear()
            self.runtime = Runtime(
                self._engines or build_engines(),
                self.settings.engine_settings(),
                self._queue_config,
                dead_letter_inventory=False,
                task_of=self._task_of,
            )
            if self.settings.http_port:
                self.http_port = await http.start(self.settings.http_host, self.settings.http_port)
            self._loose = AIOKafkaProducer(
                bootstrap_servers=kafka.bootstrap_servers,
                acks="all",
                enable_idempotence=True,
                linger_ms=5,
                compression_type=kafka.compression(),
            )
            await self._loose.start()
            await self._catch_up_tables()
            await self._start_peers()
            # restores assign and seek often, and each waits for a fetch in flight: keep fetches short
            self._restorer = new_reader(kafka.bootstrap_servers, f"{kafka.client_id}-restore", fetch_max_wait_ms=20)
            await self._restorer.start()
            self._consumer = AIOKafkaConsumer(
                bootstrap_servers=kafka.bootstrap_servers,
                client_id=kafka.client_id,
                group_id=kafka.group_id,
                group_instance_id=kafka.group_instance_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                session_timeout_ms=kafka.session_timeout_ms,
                heartbeat_interval_ms=kafka.heartbeat_interval_ms,
                partition_assignment_strategy=(RangePartitionAssignor,),
            )
            await self._consumer.start()
            self._consumer.subscribe(self._subject_topics, listener=_Listener(self))
            await self._loop()
        except BaseException:
            self._alive = False
            raise
        finally:
            self.metrics.ready.set(0)
            await self._shutdown(http)

    async def _setup_topics(self) -> dict[str, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.settings.kafka.bootstrap_servers)
        async for attempt in kafka_retrying():
            with attempt:
                await admin.start()
        try:
            return await ensure_topics(self.settings, admin)
        finally:
            await admin.close()

    async def _catch_up_tables(self) -> None:
        kafka = self.settings.kafka
        self._tables = new_reader(kafka.bootstrap_servers, f"{kafka.client_id}-tables")
        await self._tables.start()
        partitions = [
            TopicPartition(topic, p)
            for topic in (self._names.cluster_status, self._names.taints)
            for p in sorted(self._tables.partitions_for_topic(topic) or {0})
        ]
        self._tables.assign(partitions)
        started = time.perf_counter()
        runtime = self._require_runtime()

        def apply(chunk: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
            # no subject is owned yet, so nothing is published; bad records are dead-lettered live only
            runtime.process(self._inputs(chunk), _utcnow())

        count = await read_to_end(self._tables, partitions, apply)
        self.metrics.restore_seconds.labels("inventory").set(time.perf_counter() - started)
        self._tables_ready = True
        log.info("global tables caught up", extra={"records": count, "seconds": time.perf_counter() - started})

    async def _start_peers(self) -> None:
        kafka, runtime = self.settings.kafka, self._require_runtime()
        self._peers = PeerChangelog(
            kafka.bootstrap_servers,
            f"{kafka.client_id}-peers",
            self._names.changelog,
            self.partitions,
            runtime.observe_peer,
        )
        await self._peers.start()

    async def _shutdown(self, http: HealthServer) -> None:
        for stop in (
            self._tasks.stop_all,
            *(c.stop for c in (self._consumer, self._tables, self._restorer, self._loose) if c is not None),
            *((self._peers.stop,) if self._peers is not None else ()),
            http.stop,
        ):
            try:
                await stop()
            except Exception:  # keep stopping the rest
                log.exception("error during shutdown")

    # --- assignment and restore -------------------------------------------------------------------
    async def take_assignment(self, assigned: Iterable[TopicPartition]) -> None:
        """Keep tasks that stay, drop the ones that went, start and restore the new ones."""
        async with self.batch_lock:
            await self._reassign(assigned)

    async def _reassign(self, assigned: Iterable[TopicPartition]) -> None:
        self.metrics.rebalances.inc()
        wanted = {tp.partition for tp in assigned if tp.topic in self._subject_topics}
        runtime = self._require_runtime()
        for partition in sorted(self._tasks.owned - wanted):
            runtime.forget(self._keys_of(partition))
            await self._tasks.stop(partition)
        # the others' decisions first: re-deciding a restored task counts them in Balance
        started = time.perf_counter()
        count = await self._require(self._peers).follow(wanted)
        self.metrics.restore_seconds.labels("peers").set(time.perf_counter() - started)
        log.info("following other instances' decisions", extra={"records": count, "tasks": len(wanted)})
        for partition in sorted(wanted - self._tasks.owned):
            await self._take_task(partition, rewind=False)
        runtime.dead_letter_inventory = 0 in wanted
        self._assigned_once = True
        self.metrics.subjects.set(len(runtime.states))
        self.metrics.ready.set(1 if self.ready else 0)
        log.info("assignment", extra={"tasks": sorted(wanted)})

    async def _take_task(self, partition: int, *, rewind: bool = True) -> None:
        """Fence the previous owner, restore state and re-decide. `rewind` moves the consumer back to the
        committed offsets (after an aborted transaction); a fresh assignment starts there by itself."""
        runtime = self._require_runtime()
        runtime.forget(self._keys_of(partition))
        runtime.adopt(lambda key: self._task_of(key) == partition)
        async for attempt in kafka_retrying():
            with attempt:
                await self._tasks.start(partition)
        consumer = self._require(self._consumer)
        for topic in self._subject_topics if rewind else ():
            tp = TopicPartition(topic, partition)
            committed = await consumer.committed(tp)
            if committed is None:
                await seek_to_start(consumer, [tp], self.settings.kafka.session_timeout_ms / 1000)
            else:
                consumer.seek(tp, committed)
        started = time.perf_counter()
        restorer = self._require(self._restorer)
        changelog = TopicPartition(self._names.changelog, partition)
        restorer.assign([changelog])
        await read_to_end(restorer, [changelog], changelog_sink(runtime.restore, "changelog entry"))
        self.metrics.restore_seconds.labels("changelog").set(time.perf_counter() - started)
        await self._publish(runtime.redecide_chunks(self._keys_of(partition), _utcnow()), {})

    def _keys_of(self, partition: int) -> list[str]:
        states = self._require_runtime().states
        return [key for key in states if self._task_of(key) == partition]

    def _task_of(self, subject: str) -> int:
        """The task (partition) owning a subject; cached, as murmur2 is pure Python in aiokafka."""
        task = self._tasks_by_subject.get(subject)
        if task is None:
            task = self._tasks_by_subject[subject] = partition_of(subject, self.partitions)
        return task

    # --- the loop ---------------------------------------------------------------------------------
    async def _loop(self) -> None:
        consumer, tables, peers = self._require(self._consumer), self._require(self._tables), self._require(self._peers)
        runtime = self._require_runtime()
        kafka = self.settings.kafka
        next_reload = next_lag = 0.0
        while not self._stop.is_set():
            wait_ms = kafka.poll_timeout_ms
            due = runtime.next_timer()
            if due is not None:
                wait_ms = max(0, min(wait_ms, int((due - _utcnow()).total_seconds() * 1000) + 1))
            subjects = await consumer.getmany(timeout_ms=wait_ms, max_records=kafka.max_batch_records)
            # the inventory is polled after the subjects, so a batch sees the tables at least as new as its records
            inventory = await tables.getmany(timeout_ms=0, max_records=kafka.max_batch_records)
            from_peers = await peers.poll(kafka.max_batch_records)
            if self._stop.is_set() and subjects:
                # not processed: the offsets stay uncommitted and the next owner reads them again
                break
            clock = time.monotonic()
            async with self.batch_lock:
                # a rebalance may have taken partitions since the poll: their records belong to the new owner
                owned = self._tasks.owned
                peers.apply(from_peers, owned)
                await self._handle(inventory, {tp: rs for tp, rs in subjects.items() if tp.partition in owned})
                if self._queue_file is not None and clock >= next_reload:
                    next_reload = clock + self.settings.queue_config_poll_seconds
                    await self._reload_queue_config()
            if clock >= next_lag:
                next_lag = clock + 1.0
                await self._update_lag(consumer)

    async def _handle(self, inventory: _Records, subjects: _Records) -> None:
        runtime = self._require_runtime()
        records = [r for batch in inventory.values() for r in batch] + [r for b in subjects.values() for r in b]
        now = _utcnow()
        if records and self.first_batch_at is None:
            self.first_batch_at = time.perf_counter()
        chunks = self._engine_timed(runtime.process_chunks(self._inputs(records), now)) if records else iter(())
        offsets: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        for tp, batch in subjects.items():
            if batch:
                offsets[tp.partition][tp] = batch[-1].offset + 1
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
        """Commit each task's records and offsets atomically, sending each chunk as the runtime hands it over
        and committing a task in the background once the runtime marks it finished; records bound to no task go
        out plainly. The chunks are always exhausted: the runtime's state moves on with them, and a task whose
        transaction failed is restored from Kafka afterwards."""
        runtime = self._require_runtime()
        decided = runtime.decided_subjects
        transactions = TaskTransactions(self._tasks, self._names.name, self._task_of, self.settings.kafka.group_id)
        pending = dict(offsets)
        for chunk in chunks:
            await transactions.send(chunk.records)
            if chunk.finished is not None:
                transactions.finish(chunk.finished, pending.pop(chunk.finished, {}))
            await let_producers_send()
        self.metrics.decided.inc(runtime.decided_subjects - decided)
        for tally in await transactions.commit(pending):
            self.metrics.transactions.labels("committed").inc()
            self.metrics.count_produced(tally, self._names.name)
        for task in sorted(transactions.failed):
            self.metrics.transactions.labels("aborted").inc()
            await self._take_task(task)
        if transactions.loose:
            await self._send_all(self._require(self._loose), transactions.loose)
            loose = OutputTally()
            loose.add(transactions.loose)
            self.metrics.count_produced(loose, self._names.name)

    def _engine_timed(self, chunks: Iterator[Handover]) -> Iterator[Handover]:
        """Pass the chunks through, observing the engine's time (apply, decide, encode) without the sending."""
        spent = 0.0
        while True:
            started = time.perf_counter()
            chunk = next(chunks, None)
            spent += time.perf_counter() - started
            if chunk is None:
                break
            yield chunk
        self.metrics.decision_latency.observe(spent)

    async def _send_all(self, producer: AIOKafkaProducer, records: list[OutputRecord]) -> None:
        await send_records(producer, records, self._names.name, self._task_of)

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

    async def _update_lag(self, consumer: AIOKafkaConsumer) -> None:
        for tp in consumer.assignment():
            stable = consumer.last_stable_offset(tp)
            if stable is None or stable < 0:
                continue
            position = await consumer.position(tp)
            self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, stable - position))

    def _explain(self, key: str) -> dict[str, Any] | None:
        runtime = self.runtime
        return None if runtime is None else runtime.explain(key, _utcnow())

    # --- helpers ----------------------------------------------------------------------------------
    def _require_runtime(self) -> Runtime:
        if self.runtime is None:
            raise RuntimeError("the processor is not started")
        return self.runtime

    @staticmethod
    def _require(value: Any) -> Any:
        if value is None:
            raise RuntimeError("the processor is not started")
        return value
