"""The collaborators of one started service instance, built once and passed to every shell object.

The loop, task ownership and the task commits all need the settings, the observer, the poison guard, the batch
lock, the stop flag and the task producers; they take them as one frozen `ShellContext` (and the Kafka clients
as one `ShellClients`), so a new concern is one field here instead of a constructor argument in every object.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.engine_thread import EngineThread
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.peers import PeerChangelog
from streams.kafka.poison import PoisonGuard
from streams.kafka.tasks import TaskProducers, partition_of, partitions_of
from streams.kafka.topology import misplaced_state
from streams.kafka.transactions import TaskTransactions
from streams.observer import ShellObserver
from streams.settings import Settings
from topics.names import TopicRole

__all__ = ["ShellClients", "ShellContext", "SubjectTasks"]


@dataclass(frozen=True)
class SubjectTasks:
    """The task (partition) owning each subject, for the partition count the topics were found with; cached, as
    murmur2 is pure Python in aiokafka."""

    partitions: int
    _cache: dict[str, int] = field(default_factory=dict)

    def task_of(self, subject: str) -> int:
        task = self._cache.get(subject)
        if task is None:
            task = self._cache[subject] = partition_of(subject, self.partitions)
        return task

    def tasks_of(self, subjects: Sequence[str]) -> list[int]:
        """`task_of` of each subject, those not cached yet hashed together (a restore brings thousands)."""
        cache = self._cache
        new = [subject for subject in subjects if subject not in cache]
        cache.update(zip(new, partitions_of(new, self.partitions), strict=True))
        return [cache[subject] for subject in subjects]


@dataclass(frozen=True)
class ShellContext:
    """What every shell object of a started instance shares."""

    settings: Settings
    observer: ShellObserver
    guard: PoisonGuard
    batch_lock: asyncio.Lock
    """Held while a batch or an assignment change runs: aiokafka calls the rebalance listener from its
    coordinator task, concurrently with the poll loop, and one producer must never open two transactions."""
    stop: asyncio.Event
    """The work ends: a stop was requested, or the topics changed under it (`refuse_topics`)."""
    tasks: TaskProducers
    keys: SubjectTasks
    engine_thread: EngineThread

    @functools.cached_property
    def roles(self) -> dict[str, TopicRole]:
        """Each topic name's role."""
        return self.settings.topics.roles()

    @property
    def subject_topics(self) -> list[str]:
        names = self.settings.topics
        return [names.submissions, names.advisor_recommendations]

    @functools.cached_property
    def topic_of(self) -> Callable[[TopicRole], str]:
        """Each role's topic name (called per record sent: the names' own method, no wrapper)."""
        return self.settings.topics.name

    def transactions(self) -> TaskTransactions:
        """The task transactions of one batch."""
        return TaskTransactions(self.tasks, self.topic_of, self.keys.task_of, self.settings.kafka.group_id)

    def refuse_topics(self, problem: str) -> None:
        """A topic was deleted or re-partitioned under the running tasks: stop them all (platform P14)."""
        if self.observer.topics_refused(problem):
            self.stop.set()

    def misplaced_state(self, task: int, keys: list[str]) -> None:
        """A restored changelog partition holds subjects another task owns (platform P14)."""
        self.refuse_topics(misplaced_state(self.settings.topics.changelog, task, keys, self.keys.partitions))


@dataclass(frozen=True)
class ShellClients:
    """The Kafka clients of a started instance (the task producers are in the context)."""

    consumer: AIOKafkaConsumer
    """The group consumer of the subject topics."""
    restorer: AIOKafkaConsumer
    """Reads a taken task's changelog partition back."""
    peers: PeerChangelog
    barrier: InventoryBarrier
    loose: AIOKafkaProducer
    """Sends records bound to no owned task, outside any transaction."""
