"""The Kafka processor: one service instance's clients, start-up and stop.

Start-up creates the topics, reads the global tables to their end, starts the peers' reader, joins the group
(TaskOwnership takes the assigned tasks over) and runs the ProcessingLoop; each batch goes through the
BatchHandler, the pure Runtime and the per-task transactions (Publisher). A stop ends the batch in flight
within the stop grace and closes every client within a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Sequence
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord

from engine.core import SubjectEngine
from engine.registry import build_engines
from engine.runtime import Runtime
from streams.batches import BatchHandler, Progress, input_records, utcnow
from streams.engine_thread import EngineThread
from streams.health import Health
from streams.http import HealthServer
from streams.kafka.admin import setup_topics
from streams.kafka.assignment import TaskOwnership
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.clients import group_consumer, loose_producer
from streams.kafka.membership import MemberDirectoryAssignor
from streams.kafka.peers import PeerChangelog
from streams.kafka.poison import PoisonGuard
from streams.kafka.stopping import CLIENT_STOP_SECONDS, bounded_stop
from streams.kafka.tables import new_reader
from streams.kafka.tasks import TaskProducers, partition_of, partitions_of
from streams.kafka.topic_watch import TopicWatch
from streams.kafka.topology import misplaced_state
from streams.loop import ProcessingLoop
from streams.metrics import Metrics
from streams.publisher import Publisher
from streams.queueconfig import QueueConfigFile
from streams.replica import Replica
from streams.settings import Settings
from streams.tracing import Tracing, from_environment
from streams.tuning import tune_garbage_collector, tune_switch_interval
from streams.version import VERSION

__all__ = ["Processor"]

log = logging.getLogger("placement.service")
_Client = TypeVar("_Client")

GROUP_COMMIT_FLOOR_SECONDS = 0.2
"""The least a stop gives the group's offsets after a batch used up the stop grace."""


class Processor:
    """One service instance. `run()` until `request_stop()`; ready once tables and tasks are restored."""

    def __init__(
        self,
        settings: Settings,
        *,
        engines: list[SubjectEngine[Any]] | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        """`tracing` defaults to what the `OTEL_*` environment configures (none: no spans, P16)."""
        self.settings = settings
        self.metrics = metrics or Metrics()
        self._engines = engines
        self._names = settings.topics
        self._roles = settings.topics.roles()
        self._subject_topics = [self._names.submissions, self._names.advisor_recommendations]
        self._stop = asyncio.Event()
        """The work ends: a stop was requested, or the topics changed under it (`_refuse_topics`)."""
        self._requested = asyncio.Event()
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
        self.progress = Progress()
        self._queue_file = QueueConfigFile(settings.queue_config) if settings.queue_config else None
        self._queue_config: Any = self._queue_file.load_initial() if self._queue_file else None
        kafka = settings.kafka
        self._tasks = TaskProducers(kafka)
        self._engine_thread = EngineThread(settings.engine_wait_ms)
        self._publisher = Publisher(
            self._tasks,
            self._names.name,
            self._task_of,
            settings.kafka.group_id,
            metrics=self.metrics,
            health=self.health,
            guard=self._guard,
            engine_thread=self._engine_thread,
        )
        self._consumer: AIOKafkaConsumer | None = None
        self._restorer: AIOKafkaConsumer | None = None
        self._peers: PeerChangelog | None = None
        self._loose: AIOKafkaProducer | None = None
        self._ownership: TaskOwnership | None = None
        self._watch: asyncio.Task[None] | None = None
        self.assignor = MemberDirectoryAssignor(settings.advertised(), VERSION)
        """Range's assignment, sharing the members' HTTP addresses (any replica answers, platform P17)."""
        self.tracing = tracing or from_environment(
            os.environ, group=settings.kafka.group_id, decisions_topic=self._names.decisions
        )

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Global tables caught up, group joined, every assigned task restored, not stopping."""
        return self.health.ready()

    @property
    def records_done(self) -> int:
        """Records of the batches processed and committed so far (see `progress`)."""
        return self.progress.records_done

    @property
    def owned_tasks(self) -> frozenset[int]:
        """The task partitions this instance owns now, each restored (a task being taken over counts once its
        state is back)."""
        return frozenset() if self._ownership is None else self._ownership.assigned

    def request_stop(self) -> None:
        """Signal-safe: finish the current batch, then shut down; not ready from now on."""
        self.health.stopping = True
        self._requested.set()
        self._stop.set()

    async def stop_requested(self) -> None:
        """Returns once a stop was requested."""
        await self._requested.wait()

    async def run(self) -> None:
        """Set up, catch up, join the group and process until stopped. A stop ends the batch in flight after the
        stop grace (uncommitted, it is processed again by the next owner) and whatever set-up step is waiting."""
        http = HealthServer(
            self.metrics,
            self.health.alive,
            lambda: self.ready,
            None,  # /explain is the replica's
            self.settings.explain_bearer(),
            limits=self.settings.http_limits(),
            metrics_max_age=self.settings.metrics_max_age_ms / 1000,
            replica=Replica(self, self.assignor, self.settings.http_timeout_seconds),
        )
        work = asyncio.create_task(self._work(http))
        stop = asyncio.create_task(self._stop.wait())
        failed = False
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
            grace_ends = asyncio.get_running_loop().time() + self.settings.stop_grace_seconds
            if not work.done():
                self.health.stopping = True
                done, _ = await asyncio.wait({work}, timeout=self.settings.stop_grace_seconds)
                if not done:
                    log.warning("stopping: the batch in flight is abandoned; its records are processed again")
                    work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            await self._bring_group_up_to_date(grace_ends)
        except BaseException:
            self.health.crashed = failed = True
            raise
        finally:
            stop.cancel()
            self.health.stopping = True
            self.metrics.ready.set(0)
            await self._shutdown()
            if not failed and self.health.refusal is not None:
                await self._requested.wait()  # not ready, alive: the error said what to do; a stop ends it
            await bounded_stop(http.stop)
            self._engine_thread.close()

    async def _work(self, http: HealthServer) -> None:
        kafka = self.settings.kafka
        tune_garbage_collector(self.settings.gc_threshold)
        tune_switch_interval(self.settings.switch_interval_ms)
        if self.settings.http_port:  # probes answer (not ready) while the broker is still out of reach
            self.http_port = await http.start(self.settings.http_host, self.settings.http_port)
        counts = await setup_topics(self.settings, self.health.note_broker, self.health.refuse)
        self.partitions = counts[self._names.submissions]
        self._watch = asyncio.create_task(TopicWatch(kafka, counts, self._refuse_topics).run())
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
        # restores assign and ask offsets often, and each request waits for a fetch in flight: keep fetches short
        # (a restored partition is paused, so the restorer does not poll while idle)
        self._restorer = new_reader(kafka, f"{kafka.client_id}-restore", fetch_max_wait_ms=5)
        await self._restorer.start()
        self._consumer = group_consumer(kafka, self.assignor)
        await self._consumer.start()
        self._ownership = TaskOwnership(
            runtime=self._require_runtime(),
            tasks=self._tasks,
            publisher=self._publisher,
            consumer=self._consumer,
            restorer=_started(self._restorer),
            peers=_started(self._peers),
            subject_topics=self._subject_topics,
            changelog_topic=self._names.changelog,
            task_of=self._task_of,
            tasks_of=self._tasks_of,
            metrics=self.metrics,
            health=self.health,
            batch_lock=self.batch_lock,
            stopping=self._stop,
            session_timeout_seconds=kafka.session_timeout_ms / 1000,
            misplaced=self._misplaced_state,
        )
        batches = BatchHandler(
            runtime=self._require_runtime(),
            publisher=self._publisher,
            guard=self._guard,
            metrics=self.metrics,
            roles=self._roles,
            take_task=self._ownership.take_task,
            progress=self.progress,
            tracing=self.tracing,
        )
        loop = ProcessingLoop(
            settings=self.settings,
            consumer=self._consumer,
            barrier=_started(self._barrier),
            peers=_started(self._peers),
            ownership=self._ownership,
            batches=batches,
            tasks=self._tasks,
            guard=self._guard,
            health=self.health,
            metrics=self.metrics,
            batch_lock=self.batch_lock,
            stopping=self._stop,
            queue_file=self._queue_file,
        )
        self._consumer.subscribe(self._subject_topics, listener=self._ownership.listener())
        await loop.run()

    async def _bring_group_up_to_date(self, grace_ends: float) -> None:
        """A graceful stop, its batch committed or abandoned: the group's offsets reach every position a
        transaction committed, so any next owner can start from them alone (platform P5). Within what is left
        of the stop grace, but at least `GROUP_COMMIT_FLOOR_SECONDS`, so an unreachable broker keeps the stop
        at about two seconds (P12); a reachable one answers in milliseconds."""
        if self._consumer is None:
            return
        left = grace_ends - asyncio.get_running_loop().time()
        timeout = min(CLIENT_STOP_SECONDS, max(GROUP_COMMIT_FLOOR_SECONDS, left))
        async with self.batch_lock:  # no rebalance moves the partitions meanwhile
            await self._publisher.commit_group_offsets(self._consumer, timeout, all_behind=True)

    def _refuse_topics(self, problem: str) -> None:
        """A topic was deleted or re-partitioned under the running tasks: stop them all (platform P14)."""
        if self.health.refusal is not None:
            return  # said once
        log.error(problem)
        self.health.refuse(problem)
        self._stop.set()

    def _misplaced_state(self, task: int, keys: list[str]) -> None:
        """A restored changelog partition holds subjects another task owns (platform P14)."""
        self._refuse_topics(misplaced_state(self._names.changelog, task, keys, self.partitions))

    async def _catch_up_tables(self) -> None:
        started, runtime = time.perf_counter(), self._require_runtime()

        async def apply(chunk: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
            # no subject is owned yet, so nothing is published; bad records are dead-lettered live only
            await asyncio.to_thread(runtime.process, input_records(chunk, self._roles), utcnow())
            self.health.progressed()

        inventory_topics = (self._names.cluster_status, self._names.taints)
        self._barrier, count = await InventoryBarrier.catch_up(
            self.settings.kafka, inventory_topics, apply, self._subject_topics
        )
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

    async def _shutdown(self) -> None:
        """Stop every Kafka client concurrently, each within a bound: with the broker gone, a client's stop can
        wait for ever, and the whole stop must stay within about two seconds."""
        if self._watch is not None:
            self._watch.cancel()
        stops = [
            lambda: self._tasks.stop_all(CLIENT_STOP_SECONDS * 0.8),
            *(c.stop for c in (self._consumer, self._barrier, self._restorer, self._loose, self._peers) if c),
        ]
        tracing = self.tracing
        if tracing is not None:  # exports the spans still buffered
            stops.append(lambda: asyncio.to_thread(tracing.shutdown))
        await asyncio.gather(*(bounded_stop(stop) for stop in stops))

    def _task_of(self, subject: str) -> int:
        """The task (partition) owning a subject; cached, as murmur2 is pure Python in aiokafka."""
        task = self._tasks_by_subject.get(subject)
        if task is None:
            task = self._tasks_by_subject[subject] = partition_of(subject, self.partitions)
        return task

    def _tasks_of(self, subjects: Sequence[str]) -> list[int]:
        """`_task_of` of each subject, those not cached yet hashed together (a restore brings thousands)."""
        cache = self._tasks_by_subject
        new = [subject for subject in subjects if subject not in cache]
        cache.update(zip(new, partitions_of(new, self.partitions), strict=True))
        return [cache[subject] for subject in subjects]

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
