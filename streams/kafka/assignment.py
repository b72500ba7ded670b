"""Task ownership: which task partitions this instance owns, and taking one over (fence, position, restore).

aiokafka calls the rebalance listener from its coordinator task, concurrently with the poll loop; the batch
lock keeps an assignment change and a batch apart, so one producer never opens two transactions.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aiokafka import ConsumerRebalanceListener, TopicPartition

from engine.runtime import Runtime
from streams.context import ShellClients, ShellContext
from streams.kafka.commits import GROUP_COMMIT_TIMEOUT_SECONDS, TaskCommits
from streams.kafka.group_offsets import StartPosition, fetch_committed, start_position
from streams.kafka.restores import RestoreProgress
from streams.kafka.retry import kafka_retrying
from streams.kafka.stale import StaleTasks
from streams.kafka.tables import UnreadableEntries, changelog_sink, read_latest, seek_to_start
from streams.kafka.tasks import ProducersClosedError
from streams.tuning import collector_paused_then_frozen

__all__ = ["TaskOwnership"]

log = logging.getLogger("placement.service")


class TaskOwnership:
    """Owns the task partitions the group assigned to this instance and restores each one it takes."""

    def __init__(self, ctx: ShellContext, clients: ShellClients, runtime: Runtime, commits: TaskCommits) -> None:
        self._ctx = ctx
        self._observer = ctx.observer
        self._runtime = runtime
        self._tasks = ctx.tasks
        self._commits = commits
        self._committed = commits.committed
        """What this instance committed per subject partition."""
        self._consumer = clients.consumer
        self._restorer = clients.restorer
        self._peers = clients.peers
        self._subject_topics = ctx.subject_topics
        self.assigned: frozenset[int] = frozenset()
        """Task partitions owned now, each restored."""
        self.generation = 0
        """Assignments taken so far: the loop does not process what it polled while one was taken."""
        self.stale = StaleTasks()
        """Tasks restored but not yet re-decided on inventory read to its end (the loop does it, in slices)."""
        self.positioned: dict[TopicPartition, int] = {}
        """Where the last assignment put each subject partition's consumer."""
        self._unreadable = UnreadableEntries()
        self.restores = RestoreProgress()
        """Restores in progress and the last of each task (/status)."""

    def listener(self) -> ConsumerRebalanceListener:
        return _Listener(self, self._ctx.batch_lock)

    async def revoked(self) -> None:
        """Before the partitions go (the batch lock held): bring the group's offsets up to every position a
        transaction committed, so the next owner, of whatever version, can start from the group's alone."""
        await self._commits.commit_group_offsets(self._consumer, GROUP_COMMIT_TIMEOUT_SECONDS, all_behind=True)

    async def take_assignment(self, assigned: Iterable[TopicPartition]) -> None:
        """Keep tasks that stay, drop the ones that went, start and restore the new ones (not once stopping:
        the listener runs in the consumer's own task, which a stop does not cancel)."""
        async with self._ctx.batch_lock:
            if self._ctx.stop.is_set():
                return
            try:
                await self._reassign(assigned)
            except ProducersClosedError:
                log.info("assignment abandoned: the service is stopping")

    async def _reassign(self, assigned: Iterable[TopicPartition]) -> None:
        self._observer.rebalanced()
        wanted = {tp.partition for tp in assigned if tp.topic in self._subject_topics}
        self.assigned &= wanted
        self.stale.keep(wanted)
        self._observer.tasks_kept(wanted)
        # grouped when a task is first dropped or taken (not for an assignment that keeps every task as it is);
        # the states change only here while the batch lock is held, each task's only when it is dropped or taken
        held = functools.cache(self._keys_by_task)
        for partition in sorted(self._tasks.owned - wanted):
            self._runtime.forget(held().get(partition, []))
            await self._tasks.stop(partition)
        self.generation += 1
        self.positioned.clear()
        # the others' decisions first: re-deciding a restored task counts them in Balance
        started = time.perf_counter()
        count = await self._peers.follow(wanted)
        self._observer.restored("peers", time.perf_counter() - started)
        log.info("following other instances' decisions", extra={"records": count, "tasks": len(wanted)})
        started = time.perf_counter()
        # a kept task another instance had meanwhile is taken again: that instance's state is newer
        taken = [partition for partition in sorted(self._tasks.owned & wanted) if await self._resume_kept(partition)]
        taken += sorted(wanted - self._tasks.owned)
        await self._take(taken, lambda partition: held().get(partition, []))
        if taken:  # the restore of the whole assignment, fencing included (each task's alone: task_restore)
            self._observer.restored("changelog", time.perf_counter() - started)
        self._runtime.dead_letter_inventory = 0 in wanted
        self.assigned = frozenset(wanted)
        self._observer.assignment_taken(wanted, len(self._runtime.states))
        log.info("assignment", extra={"tasks": sorted(wanted)})

    async def _resume_kept(self, partition: int) -> bool:
        """Position a task kept across a rebalance at what this instance committed, which the group's offsets
        can lag until the transaction markers land; True when the group's are ahead: another instance
        processed the task meanwhile (this one was taken for dead), so its state must be restored."""
        for topic in self._subject_topics:
            tp = TopicPartition(topic, partition)
            known, committed = self._committed.get(tp), await self._consumer.committed(tp)
            if committed is not None and (known is None or committed > known):
                return True
            if known is not None:
                self._consumer.seek(tp, known)
                self.positioned[tp] = known
        return False

    async def take_task(self, partition: int, held: list[str] | None = None) -> None:
        """Fence the previous owner, restore state, position the consumer and re-decide. Starting the producer
        completes the previous owner's last transaction, so what is read afterwards includes it. The position is
        the later of the group's committed offsets and those the task's last transaction recorded in its
        changelog partition: the group's can still lag the transaction for a moment (task_offsets.py), and a
        committed batch would run twice; unless an operator reset the group's (group_offsets.py). `held`: the
        task's subjects held here before (found when not given), dropped for the restored ones."""
        await self._take([partition], lambda _: held)

    async def _take(self, partitions: Sequence[int], held: Callable[[int], list[str] | None]) -> None:
        """`take_task` of several tasks with fewer round trips: every offsets request waits for the consumer's
        fetch in flight, and the tasks one after the other took 300 ms of a start. Their producers start
        together (the first failure is raised once every start has ended), then each task is restored, then the
        subject partitions to read from their start are positioned in one request."""
        started = await asyncio.gather(*map(self._start_producer, partitions), return_exceptions=True)
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        from_start: list[TopicPartition] = []
        resets: dict[int, dict[TopicPartition, int]] = {}
        for partition in partitions:
            from_start += await self._restore(partition, held(partition), resets)
        if resets:  # recorded before any record is read: a new owner then knows the reset was honoured
            failed = await self._commits.record_positions(resets)
            if failed:
                log.warning(
                    "a reset position was not recorded; it is recorded with the next batch", extra={"tasks": failed}
                )
        if from_start:
            session_timeout = self._ctx.settings.kafka.session_timeout_ms / 1000
            await seek_to_start(self._consumer, from_start, session_timeout)
            for tp in from_start:
                self.positioned[tp] = await self._consumer.position(tp)

    async def _start_producer(self, partition: int) -> None:
        async for attempt in kafka_retrying():
            with attempt:
                await self._tasks.start(partition)

    async def _restore(
        self, partition: int, held: list[str] | None, resets: dict[int, dict[TopicPartition, int]]
    ) -> list[TopicPartition]:
        """`take_task` of a fenced task, but for its subject partitions that neither the group nor the changelog
        has an offset for: they are returned, to be read from their start (`_take`). Partitions whose group
        offsets an operator reset go into `resets`."""
        runtime, consumer = self._runtime, self._consumer
        runtime.forget(self._keys_by_task().get(partition, []) if held is None else held)
        runtime.adopt(lambda key: self._ctx.keys.task_of(key) == partition)
        started = time.perf_counter()
        recorded: dict[TopicPartition, int] = {}
        legacy: dict[TopicPartition, set[int]] = {}
        changelog = TopicPartition(self._ctx.settings.topics.changelog, partition)
        self._restorer.assign([changelog])
        restored: list[str] = []
        # the state lives as long as the task
        with (
            collector_paused_then_frozen(),
            runtime.restoring(restored) as restore,
            self.restores.restoring(partition) as progress,
        ):
            sink = changelog_sink(
                restore, "changelog entry", recorded, legacy_offsets=legacy, unreadable=self._unreadable
            )
            await read_latest(self._restorer, [changelog], sink, progress=progress.note)
        self._restorer.pause(changelog)  # read: an assigned partition would be fetched again and again
        took = time.perf_counter() - started
        tps = [TopicPartition(topic, partition) for topic in self._subject_topics]
        group = await fetch_committed(consumer, tps)
        from_start: list[TopicPartition] = []
        for tp in tps:
            start = start_position(group.get(tp), recorded.get(tp), legacy.get(tp, ()))
            if not self._position(tp, start, resets):
                from_start.append(tp)
        # re-decided by the loop once the inventory is read to its end: on older inventory than the previous
        # owner's, an answer could go back
        tasks = self._ctx.keys.tasks_of(restored)
        strays = [key for key, task in zip(restored, tasks, strict=True) if task != partition]
        if strays:
            self._ctx.misplaced_state(partition, strays)
        self.stale.add(partition, [key for key, task in zip(restored, tasks, strict=True) if task == partition])
        self._observer.task_restored(partition, took)
        return from_start

    def _position(self, tp: TopicPartition, start: StartPosition, resets: dict[int, dict[TopicPartition, int]]) -> bool:
        """Seek a taken task's subject partition to `start`; False when it is to be read from its log start. A
        group offset behind a committed transaction's position is brought up to it with the next interval's
        commit, so the group's never stay behind (group_offsets.py)."""
        self._commits.forget(tp)
        if start.offset is None:
            return False
        if start.reset:
            log.warning(
                "the group's offset was reset outside the processor: its records are read again from there",
                extra={"partition": str(tp), "offset": start.offset},
            )
            resets.setdefault(tp.partition, {})[tp] = start.offset
        elif start.group_behind:
            log.info("the group's offset lags the task's last transaction", extra={"partition": str(tp)})
            self._commits.behind(tp, start.offset)
        self._consumer.seek(tp, start.offset)
        self.positioned[tp] = start.offset
        return True

    def consumed_positions(self) -> dict[TopicPartition, int]:
        """Where each subject partition's consumption stands: its last committed position, else where this
        instance positioned it when it took the task."""
        return {**self.positioned, **self._committed}

    def _keys_by_task(self) -> dict[int, list[str]]:
        """The subjects held here by task, in one pass over the states: searching them all for one task's keys,
        twice per task taken, read 600,000 keys in a restart of 100,000 subjects over 6 tasks."""
        held: dict[int, list[str]] = {}
        keys = list(self._runtime.states)
        for key, task in zip(keys, self._ctx.keys.tasks_of(keys), strict=True):
            held.setdefault(task, []).append(key)
        return held


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, ownership: TaskOwnership, batch_lock: asyncio.Lock) -> None:
        self._ownership = ownership
        self._batch_lock = batch_lock

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """Wait for the batch in flight: its transaction commits before the partitions go; then the group's
        offsets are brought up to date (`TaskOwnership.revoked`)."""
        async with self._batch_lock:
            await self._ownership.revoked()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._ownership.take_assignment(assigned)
