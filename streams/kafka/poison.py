"""Records that abort their task's transaction are isolated and, after a few tries, dead-lettered.

A record whose outputs the broker refuses (a state or decision larger than the topic accepts) would abort its
task's transaction, be read again after the task is restored, and abort it again, forever. After such an abort
the task's records are processed one at a time until the task has passed the failed batch, and a record that
still aborts its transaction `max_aborts` times in a row is dead-lettered instead of processed. Aborts that say
nothing about the records (fencing, a broker out of reach) are not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.errors import (
    CorruptRecordException,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)

from engine.runtime import InputRecord, OutputRecord
from engine.runtime.deadletter import dead_letter
from streams.errors import PoisonRecordError
from streams.kafka.clients import Records
from topics.errors import Stage

__all__ = ["PoisonGuard", "caused_by_records"]

_RECORD_ERRORS = (MessageSizeTooLargeError, RecordListTooLargeError, RecordTooLargeError, CorruptRecordException)


def caused_by_records(error: Exception) -> bool:
    """Whether the broker or the producer refused the records themselves, so trying them again cannot help."""
    return isinstance(error, _RECORD_ERRORS)


@dataclass
class _Suspect:
    until: dict[TopicPartition, int]
    """Offsets past the batch that failed: once the task is past them, it runs whole batches again."""
    aborts: int = 0
    error: str = ""


class PoisonGuard:
    """Tracks the tasks whose transactions records aborted, and narrows their batches to single records."""

    def __init__(self, max_aborts: int) -> None:
        self._max_aborts = max_aborts
        self._suspects: dict[int, _Suspect] = {}

    @property
    def isolating(self) -> frozenset[int]:
        """Tasks processed one record at a time."""
        return frozenset(self._suspects)

    def narrow(self, subjects: Records) -> tuple[Records, list[tuple[TopicPartition, int]]]:
        """Keep one record per isolated task (the rest is fetched again); returns the batch and the positions
        to seek back to."""
        kept: Records = {}
        rewind: list[tuple[TopicPartition, int]] = []
        taken: set[int] = set()
        for tp in sorted(subjects, key=lambda t: (t.partition, t.topic)):
            records = subjects[tp]
            suspect = self._suspects.get(tp.partition)
            if suspect is None or not records:
                kept[tp] = records
                continue
            if tp.partition in taken:
                rewind.append((tp, records[0].offset))
                continue
            taken.add(tp.partition)
            kept[tp] = records[:1]
            if len(records) > 1:
                rewind.append((tp, records[1].offset))
        return kept, rewind

    def exhausted(self, task: int) -> str | None:
        """Why the isolated task's one record is to be dead-lettered rather than tried again, if it is."""
        suspect = self._suspects.get(task)
        if suspect is None or suspect.aborts < self._max_aborts:
            return None
        return f"the record aborted its task's transaction {suspect.aborts} times: {suspect.error}"

    def dead_letters(
        self, subjects: Records, inputs: Callable[[Sequence[ConsumerRecord[bytes, bytes]]], list[InputRecord]]
    ) -> tuple[list[OutputRecord], set[int]]:
        """Dead letters of the isolated records that aborted their task's transaction too often, and their
        tasks, whose records of this batch are not processed."""
        letters: list[OutputRecord] = []
        tasks: set[int] = set()
        for tp, batch in subjects.items():
            reason = self.exhausted(tp.partition) if batch else None
            if reason is not None:
                tasks.add(tp.partition)
                error = PoisonRecordError(reason)
                letters += [dead_letter(r, Stage.PROCESS, error, bound_to_task=True) for r in inputs(batch)]
        return letters, tasks

    def aborted(self, task: int, error: Exception, until: dict[TopicPartition, int]) -> None:
        """A task's transaction was aborted: count it when the records caused it. `until` are the task's
        positions past the failed batch."""
        if not caused_by_records(error):
            return
        suspect = self._suspects.get(task)
        if suspect is None:
            suspect = self._suspects[task] = _Suspect(dict(until))
        suspect.aborts += 1
        suspect.error = f"{type(error).__name__}: {error}"

    def committed(self, task: int, positions: dict[TopicPartition, int]) -> None:
        """A task committed: its record passed; leave isolation once past the batch that failed."""
        suspect = self._suspects.get(task)
        if suspect is None:
            return
        suspect.aborts = 0
        if all(positions.get(tp, 0) >= offset for tp, offset in suspect.until.items()):
            del self._suspects[task]
