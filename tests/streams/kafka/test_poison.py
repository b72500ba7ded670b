"""PoisonGuard: a task whose records abort its transaction is narrowed to one record at a time, and a record
that keeps aborting it is dead-lettered instead of retried for ever."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError, ProducerFenced, RecordTooLargeError

from engine.runtime import InputRecord, Stage
from streams.kafka.poison import PoisonGuard, caused_by_records
from topics.names import TopicRole

SUB0, SUB1, REC0 = TopicPartition("subs", 0), TopicPartition("subs", 1), TopicPartition("recs", 0)


def records(tp: TopicPartition, *offsets: int) -> list[ConsumerRecord[bytes, bytes]]:
    return [ConsumerRecord(tp.topic, tp.partition, o, 0, 0, b"k", b"v", None, 1, 1, []) for o in offsets]


def inputs(batch: object) -> list[InputRecord]:
    return [InputRecord(TopicRole.SUBMISSIONS, r.partition, r.offset, r.key, r.value) for r in batch]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("error", "counted"),
    [
        (MessageSizeTooLargeError(), True),
        (RecordTooLargeError(), True),
        (ProducerFenced(), False),
        (KafkaConnectionError(), False),
    ],
)
def test_only_errors_about_the_records_count(error: Exception, counted: bool) -> None:
    assert caused_by_records(error) is counted  # type: ignore[arg-type]
    guard = PoisonGuard(max_aborts=1)
    guard.aborted(0, error, {SUB0: 10})  # type: ignore[arg-type]
    assert (0 in guard.isolating) is counted


def test_an_isolated_task_takes_one_record_and_the_rest_is_fetched_again() -> None:
    guard = PoisonGuard(max_aborts=3)
    guard.aborted(0, MessageSizeTooLargeError(), {SUB0: 8, REC0: 3})
    kept, rewind = guard.narrow({REC0: records(REC0, 1, 2), SUB0: records(SUB0, 5, 6, 7), SUB1: records(SUB1, 1, 2)})
    assert {tp: [r.offset for r in rs] for tp, rs in kept.items()} == {REC0: [1], SUB1: [1, 2]}
    assert sorted(rewind) == sorted([(SUB0, 5), (REC0, 2)])


def test_a_record_that_aborts_its_task_max_times_is_dead_lettered_then_the_task_runs_whole_batches() -> None:
    guard = PoisonGuard(max_aborts=2)
    batch = {SUB0: records(SUB0, 5)}
    guard.aborted(0, MessageSizeTooLargeError(), {SUB0: 9})
    assert guard.dead_letters(batch, inputs) == ([], set())
    guard.aborted(0, MessageSizeTooLargeError("too large"), {SUB0: 6})
    letters, tasks = guard.dead_letters(batch, inputs)
    assert tasks == {0}
    (letter,) = letters
    headers = dict(letter.headers)
    assert headers["__connect.errors.stage"].decode() == Stage.PROCESS
    assert b"aborted its task's transaction 2 times" in headers["__connect.errors.exception.message"]
    assert headers["__connect.errors.offset"] == b"5"
    guard.committed(0, {SUB0: 6})
    assert 0 in guard.isolating, "still inside the batch that failed"
    guard.committed(0, {SUB0: 9})
    assert guard.isolating == frozenset()


def test_a_commit_resets_the_count_of_the_next_record() -> None:
    guard = PoisonGuard(max_aborts=2)
    guard.aborted(0, MessageSizeTooLargeError(), {SUB0: 9})
    guard.committed(0, {SUB0: 6})
    guard.aborted(0, MessageSizeTooLargeError(), {SUB0: 9})
    assert guard.dead_letters({SUB0: records(SUB0, 6)}, inputs) == ([], set())
