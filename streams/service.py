"""The Kafka processor: one service instance's clients, start-up and stop.

`Processor.run` starts the HTTP endpoint, then `start` creates the topics, reads the global tables to their end,
starts the peers' reader and every client, builds the shell's collaborators once into a `ShellContext`, and joins
the group (TaskOwnership takes the assigned tasks over); the `ProcessingLoop` (loop.py) then takes each batch
from poll to commit. A stop ends the batch in flight within the stop grace and closes every client within a
bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord

from engine.core import SubjectEngine
from engine.registry import build_engines
from engine.runtime import Runtime
from streams.consumed import input_records, utcnow
from streams.context import ShellClients, ShellContext, SubjectTasks
from streams.engine_thread import EngineThread
from streams.health import Health
from streams.http import HealthServer
from streams.kafka.admin import setup_topics
from streams.kafka.assignment import TaskOwnership
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.clients import group_consumer, loose_producer
from streams.kafka.commits import TaskCommits
from streams.kafka.membership import MemberDirectoryAssignor
from streams.kafka.peers import PeerChangelog
from streams.kafka.poison import PoisonGuard
from streams.kafka.restores import RestoreProgress
from streams.kafka.stopping import CLIENT_STOP_SECONDS, bounded_stop
from streams.kafka.tables import new_reader
from streams.kafka.tasks import TaskProducers, partition_of
from streams.kafka.topic_watch import TopicWatch
from streams.loop import ProcessingLoop
from streams.metrics import Metrics
from streams.observer import Progress, ShellObserver
from streams.queueconfig import QueueConfigFile
from streams.replica import Replica
from streams.settings import Settings
from streams.tracing import Tracing, from_environment
from streams.tuning import tune_garbage_collector, tune_switch_interval
from streams.version import VERSION

__all__ = ["Processor", "RunningShell"]

log = logging.getLogger("placement.service")

GROUP_COMMIT_FLOOR_SECONDS = 0.2
"""The least a stop gives the group's offsets after a batch used up the stop grace."""


class _Client(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


_C = TypeVar("_C", bound=_Client)
_T = TypeVar("_T")


@dataclass(frozen=True)
class RunningShell:
    """A started instance: its clients, runtime and shell objects, every one there."""

    ctx: ShellContext
    clients: ShellClients
    runtime: Runtime
    commits: TaskCommits
    ownership: TaskOwnership
    loop: ProcessingLoop


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
        metrics = metrics or Metrics()
        tracing = tracing or from_environment(
            os.environ, group=settings.kafka.group_id, decisions_topic=settings.topics.decisions
        )
        health = Health(metrics, settings.liveness_timeout_seconds)
        self.observer = ShellObserver(metrics, health, settings.topics.name, tracing)
        self._engines = engines
        self._stop = asyncio.Event()
        """The work ends: a stop was requested, or the topics changed under it (`ShellContext.refuse_topics`)."""
        self._requested = asyncio.Event()
        self.batch_lock = asyncio.Lock()
        """See `ShellContext.batch_lock`."""
        self.http_port: int | None = None
        self._queue_file = QueueConfigFile(settings.queue_config) if settings.queue_config else None
        self._queue_config: Any = self._queue_file.load_initial() if self._queue_file else None
        self._tasks = TaskProducers(settings.kafka)
        self._engine_thread = EngineThread(settings.engine_wait_ms)
        self._stops: list[Callable[[], Awaitable[None]]] = []
        """The stop of every client started so far, in the order they were started."""
        self._watch: asyncio.Task[None] | None = None
        self.assignor = MemberDirectoryAssignor(settings.advertised(), VERSION)
        """Range's assignment, sharing the members' HTTP addresses (any replica answers, platform P17)."""
        self._runtime: Runtime | None = None
        """The runtime once created: the tables restore into it before the shell is started."""
        self._shell: RunningShell | None = None

    # --- what tests, benchmarks and the probes read ---------------------------------------------------
    @property
    def metrics(self) -> Metrics:
        return self.observer.metrics

    @property
    def health(self) -> Health:
        return self.observer.health

    @property
    def progress(self) -> Progress:
        return self.observer.progress

    @property
    def tracing(self) -> Tracing | None:
        return self.observer.tracing

    @property
    def runtime(self) -> Runtime | None:
        """The runtime, from the moment the topics are checked (None before)."""
        return self._runtime

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
        return frozenset() if self._shell is None else self._shell.ownership.assigned

    @property
    def _restorer(self) -> AIOKafkaConsumer | None:
        return None if self._shell is None else self._shell.clients.restorer

    # --- lifecycle --------------------------------------------------------------------------------------
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
        tune_garbage_collector(self.settings.gc_threshold)
        tune_switch_interval(self.settings.switch_interval_ms)
        if self.settings.http_port:  # probes answer (not ready) while the broker is still out of reach
            self.http_port = await http.start(self.settings.http_host, self.settings.http_port)
        self._shell = await self.start()
        await self._shell.loop.run()

    async def start(self) -> RunningShell:
        """Create and check the topics, read the global tables to their end, start every client, build the
        shell's collaborators once, and join the group. Each client is stopped by `run`'s shutdown, however far
        the start got."""
        settings, names, kafka = self.settings, self.settings.topics, self.settings.kafka
        counts = await setup_topics(settings, self.health.note_broker, self.health.refuse)
        ctx = ShellContext(
            settings=settings,
            observer=self.observer,
            guard=PoisonGuard(settings.max_task_aborts),
            batch_lock=self.batch_lock,
            stop=self._stop,
            tasks=self._tasks,
            keys=SubjectTasks(counts[names.submissions]),
            engine_thread=self._engine_thread,
        )
        self._watch = asyncio.create_task(TopicWatch(kafka, counts, ctx.refuse_topics).run())
        runtime = self._runtime = Runtime(
            self._engines or build_engines(),
            settings.engine_settings(),
            self._queue_config,
            dead_letter_inventory=False,
            task_of=ctx.keys.task_of,
        )
        loose = await self._started(loose_producer(kafka))
        barrier = await self._catch_up_tables(ctx, runtime)
        peers = await self._started(
            PeerChangelog(kafka, f"{kafka.client_id}-peers", names.changelog, ctx.keys.partitions, runtime.observe_peer)
        )
        # restores assign and ask offsets often, and each request waits for a fetch in flight: keep fetches short
        # (a restored partition is paused, so the restorer does not poll while idle)
        restorer = await self._started(new_reader(kafka, f"{kafka.client_id}-restore", fetch_max_wait_ms=5))
        consumer = await self._started(group_consumer(kafka, self.assignor))
        clients = ShellClients(consumer=consumer, restorer=restorer, peers=peers, barrier=barrier, loose=loose)
        commits = TaskCommits(ctx)
        ownership = TaskOwnership(ctx, clients, runtime, commits)
        loop = ProcessingLoop(ctx, clients, runtime, ownership=ownership, commits=commits, queue_file=self._queue_file)
        consumer.subscribe(ctx.subject_topics, listener=ownership.listener())
        return RunningShell(ctx, clients, runtime, commits, ownership, loop)

    async def _started(self, client: _C) -> _C:
        """Start a client, its stop registered first (a start cut short leaves an open client too)."""
        self._stops.append(client.stop)
        await client.start()
        return client

    async def _bring_group_up_to_date(self, grace_ends: float) -> None:
        """A graceful stop, its batch committed or abandoned: the group's offsets reach every position a
        transaction committed, so any next owner can start from them alone (platform P5). Within what is left
        of the stop grace, but at least `GROUP_COMMIT_FLOOR_SECONDS`, so an unreachable broker keeps the stop
        at about two seconds (P12); a reachable one answers in milliseconds."""
        shell = self._shell
        if shell is None:
            return
        left = grace_ends - asyncio.get_running_loop().time()
        timeout = min(CLIENT_STOP_SECONDS, max(GROUP_COMMIT_FLOOR_SECONDS, left))
        async with self.batch_lock:  # no rebalance moves the partitions meanwhile
            await shell.commits.commit_group_offsets(shell.clients.consumer, timeout, all_behind=True)

    async def _catch_up_tables(self, ctx: ShellContext, runtime: Runtime) -> InventoryBarrier:
        started, names = time.perf_counter(), self.settings.topics

        async def apply(chunk: Sequence[ConsumerRecord[bytes, bytes]]) -> None:
            # no subject is owned yet, so nothing is published; bad records are dead-lettered live only
            await asyncio.to_thread(runtime.process, input_records(chunk, ctx.roles), utcnow())
            self.health.progressed()

        inventory_topics = (names.cluster_status, names.taints)
        kafka = self.settings.kafka
        barrier, count = await InventoryBarrier.catch_up(kafka, inventory_topics, apply, ctx.subject_topics)
        self._stops.append(barrier.stop)
        self.observer.restored("inventory", time.perf_counter() - started)
        log.info("global tables caught up", extra={"records": count, "seconds": time.perf_counter() - started})
        return barrier

    async def _shutdown(self) -> None:
        """Stop every Kafka client concurrently, each within a bound: with the broker gone, a client's stop can
        wait for ever, and the whole stop must stay within about two seconds."""
        if self._watch is not None:
            self._watch.cancel()
        stops = [lambda: self._tasks.stop_all(CLIENT_STOP_SECONDS * 0.8), *self._stops]
        tracing = self.tracing
        if tracing is not None:  # exports the spans still buffered
            stops.append(lambda: asyncio.to_thread(tracing.shutdown))
        await asyncio.gather(*(bounded_stop(stop) for stop in stops))

    # --- what the replica's routes read (streams/replica.py) ---------------------------------------------
    def task_of(self, subject: str) -> int:
        """The task owning a subject: by the topics' partition count once checked, the configured one before."""
        if self._shell is None:
            return partition_of(subject, self.settings.kafka.task_partitions)
        return self._shell.ctx.keys.task_of(subject)

    @property
    def assigned_tasks(self) -> frozenset[int]:
        """The tasks the group assigned to this instance, restored or not."""
        if self._shell is None:
            return frozenset()
        return frozenset(tp.partition for tp in self._shell.clients.consumer.assignment())

    @property
    def restores(self) -> RestoreProgress | None:
        """Restores in progress and the last of each task; None before the shell started."""
        return None if self._shell is None else self._shell.ownership.restores

    async def in_engine(self, call: Callable[[], _T]) -> _T:
        """`call` in the engine's worker thread while no batch runs (the runtime is not thread-safe)."""
        async with self.batch_lock:
            thread = self._engine_thread
            return await thread.result(thread.start(call))
