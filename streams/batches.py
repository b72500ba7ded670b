"""One batch of the loop: the polled records go through the runtime in a worker thread and out through the task
transactions, with the metrics of what was consumed, processed and isolated.

The runtime runs in a worker thread, so however long one batch takes, the event loop keeps heartbeating to the
group and answering the health probes.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from engine.runtime import Handover, InputRecord, Runtime
from streams.kafka.clients import Records
from streams.kafka.poison import PoisonGuard
from streams.metrics import Metrics
from streams.misplaced import MisplacedRecords
from streams.publisher import GROUP_COMMIT_TIMEOUT_SECONDS, Publisher
from streams.tracing import Tracing
from topics.names import TopicRole

__all__ = ["BatchHandler", "Progress", "Records", "input_records", "observe_queued", "without_processed"]

log = logging.getLogger("placement.service")


@dataclass
class Progress:
    """Batches processed and committed, so tests and benchmarks can wait for progress; `first_batch_at` and
    `last_commit_at` are `time.perf_counter()` instants, so benchmarks time the consume-process-commit loop the way
    the pass-through ceiling is timed."""

    batches_done: int = 0
    records_done: int = 0
    first_batch_at: float | None = None
    last_commit_at: float = 0.0


def utcnow() -> datetime:
    return datetime.now(UTC)


def input_records(records: Iterable[ConsumerRecord[bytes, bytes]], roles: Mapping[str, TopicRole]) -> list[InputRecord]:
    """Consumed records as the runtime takes them."""
    return [
        InputRecord(
            topic=roles[r.topic],
            partition=r.partition,
            offset=r.offset,
            key=r.key,
            value=r.value,
            timestamp=datetime.fromtimestamp(r.timestamp / 1000, UTC) if r.timestamp >= 0 else None,
            topic_name=r.topic,
            headers=tuple(r.headers) if r.headers else (),
        )
        for r in records
    ]


def without_processed(
    subjects: Records, floors: Mapping[TopicPartition, int]
) -> tuple[Records, dict[TopicPartition, int]]:
    """The polled records minus those below the position this instance committed (or restored to): its state
    already holds them, so deciding them again would publish their decisions twice. Such records come back when
    a consumer position falls back, which a broker restart in the middle of a rebalance was seen to cause (a
    soak published 4 decisions twice from one producer, with no fence between). Returns the records kept and
    how many were dropped per partition."""
    kept: Records = {}
    dropped: dict[TopicPartition, int] = {}
    for tp, records in subjects.items():
        floor = floors.get(tp)
        if floor is None or not records or records[0].offset >= floor:
            kept[tp] = records
            continue
        fresh = [r for r in records if r.offset >= floor]
        dropped[tp] = len(records) - len(fresh)
        kept[tp] = fresh
    return kept, dropped


def observe_queued(metrics: Metrics, subjects: Records) -> None:
    """Per polled record, its timestamp to now: producing, the broker, fetching and waiting for the loop."""
    now_ms = time.time() * 1000
    queued = metrics.batch_stage.labels("queued")
    for records in subjects.values():
        for record in records:
            queued.observe(max(0.0, (now_ms - record.timestamp) / 1000))


class BatchHandler:
    """Processes and publishes batches; restores (through `take_task`) each task whose transaction aborted."""

    def __init__(
        self,
        *,
        runtime: Runtime,
        publisher: Publisher,
        guard: PoisonGuard,
        metrics: Metrics,
        roles: Mapping[str, TopicRole],
        take_task: Callable[[int], Awaitable[None]],
        progress: Progress,
        tracing: Tracing | None = None,
    ) -> None:
        self.runtime = runtime
        self._publisher = publisher
        self._guard = guard
        self._metrics = metrics
        self._roles = roles
        self._take_task = take_task
        self._progress = progress
        self._misplaced = MisplacedRecords(metrics)
        self._tracing = tracing
        """Spans per consumed record when an exporter is configured (P16); None costs nothing."""

    async def handle(self, inventory: list[ConsumerRecord[bytes, bytes]], subjects: Records) -> None:
        """Apply the inventory records and the owned tasks' subject records, fire due timers, and commit each
        task's outputs with its consumed offsets."""
        runtime, metrics, progress = self.runtime, self._metrics, self._progress
        offsets: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        for tp, batch in subjects.items():
            if batch:
                offsets[tp.partition][tp] = batch[-1].offset + 1
        doomed, doomed_tasks = self._guard.dead_letters(subjects, self._inputs)
        records = inventory + [r for tp, b in subjects.items() if tp.partition not in doomed_tasks for r in b]
        now = utcnow()
        if records and progress.first_batch_at is None:
            progress.first_batch_at = time.perf_counter()
        chunks: Iterator[Handover] = iter([Handover(doomed)] if doomed else [])
        spans = None
        if records:
            inputs = self._inputs(records)
            if self._tracing is not None:
                spans = self._tracing.start(inputs)
                inputs = spans.inputs
            processed = runtime.process_chunks(inputs, now, defer_costly=True)
            chunks = itertools.chain(chunks, processed if spans is None else spans.watch(processed))
        by_topic = Counter(record.topic for record in records)
        for topic, count in by_topic.items():
            metrics.consumed.labels(topic).inc(count)
        aborted = await self.publish(itertools.chain(chunks, runtime.fire_timer_chunks(now)), offsets)
        if spans is not None:
            spans.committed(aborted)
        for topic, count in by_topic.items():
            metrics.processed.labels(topic).inc(count)
        committed_at = time.time() * 1000
        for batch in subjects.values():
            for record in batch:
                metrics.event_age.observe(max(0.0, (committed_at - record.timestamp) / 1000))
        metrics.subjects.set(len(runtime.states))
        metrics.follow_engine_counters(runtime.counters())
        self._misplaced.note(runtime.take_misplaced())
        for subject, message in runtime.take_notices():
            log.warning(message, extra={"subject": subject})
        for incident in runtime.take_incidents():
            metrics.incidents.labels(incident.stage).inc()
            log.error(
                "isolated a failure",
                extra={"subject": incident.subject, "stage": incident.stage, "error": repr(incident.error)},
            )
        if records:
            progress.batches_done += 1
            progress.records_done += len(records)
            progress.last_commit_at = time.perf_counter()

    async def publish(self, chunks: Iterable[Handover], offsets: dict[int, dict[TopicPartition, int]]) -> list[int]:
        """Publish outputs (see Publisher) and restore from Kafka each task whose transaction was aborted; returns
        those tasks."""
        aborted = await self._publisher.publish(self.runtime, chunks, offsets)
        for task in aborted:
            await self._take_task(task)
        return aborted

    async def commit_group_offsets(self, consumer: AIOKafkaConsumer) -> None:
        """Bring the group's offsets of tasks due a group commit up to what their transactions committed."""
        await self._publisher.commit_group_offsets(consumer, GROUP_COMMIT_TIMEOUT_SECONDS, all_behind=False)

    def _inputs(self, records: Iterable[ConsumerRecord[bytes, bytes]]) -> list[InputRecord]:
        return input_records(records, self._roles)
