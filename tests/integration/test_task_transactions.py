"""A batch's task transactions on a real broker: a task the runtime marks finished commits at once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from kafka_support import KafkaWorld, Record, admin_client

from engine.runtime import OutputRecord
from localbroker.broker import LocalBroker
from streams.kafka.admin import create_topics
from streams.kafka.group_offsets import GROUP_METADATA
from streams.kafka.task_offsets import decode_task_offsets, is_task_offsets_key
from streams.kafka.tasks import TaskProducers
from streams.kafka.transactions import TaskTransactions
from streams.settings import Settings
from topics.names import TopicRole

pytestmark = pytest.mark.integration


def _task_of(subject: str) -> int:
    return int(subject[-1])


def _decision(subject: str) -> OutputRecord:
    return OutputRecord(TopicRole.DECISIONS, subject.encode(), b"{}", subject=subject)


def _keys(records: list[Record]) -> set[bytes | None]:
    return {r.key for r in records}


def task_offsets_records(records: list[Record]) -> list[Record]:
    return [r for r in records if r.key is not None and is_task_offsets_key(r.key)]


async def _started(world: KafkaWorld, **kafka: Any) -> tuple[Settings, TaskProducers]:
    settings = world.settings(kafka=kafka)
    await create_topics(settings)
    producers = TaskProducers(settings.kafka)
    for task in range(world.partitions):
        await producers.start(task)
    return settings, producers


def _batch(settings: Settings, producers: TaskProducers) -> TaskTransactions:
    """One batch's transactions, as the processor makes them."""
    return TaskTransactions(producers, settings.topics.name, _task_of, settings.kafka.group_id)


async def _committed(world: KafkaWorld, topic: str, expected: dict[int, int]) -> dict[int, int]:
    """The group's offsets once they equal `expected`, or as they are after 15 s."""
    offsets = await world.committed_offsets(topic)
    for _ in range(150):
        if offsets == expected:
            break
        await asyncio.sleep(0.1)
        offsets = await world.committed_offsets(topic)
    return offsets


async def test_a_finished_task_commits_while_the_other_stays_open(world: KafkaWorld) -> None:
    settings, producers = await _started(world)
    topics = settings.topics
    try:
        transactions = _batch(settings, producers)
        await transactions.send([_decision("a0"), _decision("a1")])
        transactions.finish(0, {TopicPartition(topics.submissions, 0): 7})
        seen = await world.collect(topics.decisions, lambda r: b"a0" in _keys(r))
        assert b"a1" not in _keys(seen), "task 1's transaction is still open"
        assert await _committed(world, topics.submissions, {0: 7}) == {0: 7}, "with task 0's offsets"

        await transactions.send([_decision("b0")])  # task 0 again: a second transaction of the batch
        tallies = await transactions.commit({1: {TopicPartition(topics.submissions, 1): 3}})
        assert [sum(t.topics.values()) for t in tallies] == [1, 1, 1]
        assert not transactions.failed
        everything = await world.collect(topics.decisions, lambda r: {b"a0", b"a1", b"b0"} <= _keys(r))
        assert sorted(r.key for r in everything if r.key is not None) == [b"a0", b"a1", b"b0"]
        assert await _committed(world, topics.submissions, {0: 7, 1: 3}) == {0: 7, 1: 3}
    finally:
        await producers.stop_all()


@asynccontextmanager
async def _zombie_of_task_0(world: KafkaWorld) -> AsyncIterator[tuple[Settings, TaskTransactions, AIOKafkaProducer]]:
    """Started task producers, a batch's transactions, and a producer that fences task 0 once started."""
    settings, producers = await _started(world)
    zombie = AIOKafkaProducer(bootstrap_servers=world.bootstrap, transactional_id=producers.transactional_id(0))
    try:
        yield settings, _batch(settings, producers), zombie
    finally:
        await zombie.stop()
        await producers.stop_all()


async def test_a_fenced_task_fails_alone_and_takes_no_more_records(world: KafkaWorld) -> None:
    async with _zombie_of_task_0(world) as (settings, transactions, zombie):
        topics = settings.topics
        await transactions.send([_decision("a0"), _decision("a1")])
        await zombie.start()  # bumps task 0's epoch: its producer is fenced
        transactions.finish(0, {TopicPartition(topics.submissions, 0): 7})
        await transactions.send([_decision("b0")])  # waits for task 0's commit, which fails
        tallies = await transactions.commit({})
        assert transactions.failed == {0}
        assert [sum(t.topics.values()) for t in tallies] == [1], "task 1 alone committed"
        seen = await world.collect(topics.decisions, lambda r: b"a1" in _keys(r))
        assert _keys(seen) == {b"a1"}
        assert await world.committed_offsets(topics.submissions) == {}


async def test_a_task_fenced_before_its_commit_fails_alone(world: KafkaWorld) -> None:
    async with _zombie_of_task_0(world) as (settings, transactions, zombie):
        topics = settings.topics
        await zombie.start()  # bumps task 0's epoch before its producer sends anything
        # two records over a batch's size: the first batch goes out at once, and its AddPartitionsToTxn
        # meets the fence, which ends the producer's transaction: its next send raises IllegalOperation
        large = [OutputRecord(TopicRole.DECISIONS, b"a0", bytes(700_000), subject="a0") for _ in range(2)]
        await transactions.send([*large, _decision("a1")])
        await asyncio.sleep(1.0)
        transactions.finish(0, {TopicPartition(topics.submissions, 0): 7})
        tallies = await transactions.commit({1: {TopicPartition(topics.submissions, 1): 3}})
        assert transactions.failed == {0}
        assert [sum(t.topics.values()) for t in tallies] == [1], "task 1 alone committed"
        seen = await world.collect(topics.decisions, lambda r: b"a1" in _keys(r))
        assert _keys(seen) == {b"a1"}
        assert await _committed(world, topics.submissions, {1: 3}) == {1: 3}


async def test_offsets_sent_before_the_records_count_only_once_the_task_commits(world: KafkaWorld) -> None:
    settings, producers = await _started(world)
    topics = settings.topics
    consumed = {TopicPartition(topics.submissions, 0): 5}
    try:
        transactions = _batch(settings, producers)
        await transactions.open({0: consumed})
        await asyncio.sleep(1.0)  # AddOffsetsToTxn and TxnOffsetCommit are long over
        assert await world.committed_offsets(topics.submissions) == {}, "pending until the transaction commits"
        await transactions.send([_decision("a0")])
        transactions.finish(0, consumed)
        tallies = await transactions.commit({})
        assert not transactions.failed
        assert [sum(t.topics.values()) for t in tallies] == [1]
        assert await _committed(world, topics.submissions, {0: 5}) == {0: 5}
        assert producers.written[0] == {TopicPartition(topics.decisions, 0), TopicPartition(topics.changelog, 0)}
    finally:
        await producers.stop_all()


async def test_partitions_added_early_but_not_written_still_commit(world: KafkaWorld) -> None:
    settings, producers = await _started(world)
    topics = settings.topics
    try:
        first = _batch(settings, producers)
        await first.send([_decision("a0")])
        await first.commit({})
        assert producers.written[0] == {TopicPartition(topics.decisions, 0)}
        # the next transaction adds decisions-0 at its start, then writes only offsets
        second = _batch(settings, producers)
        await second.open({0: {TopicPartition(topics.submissions, 0): 9}})
        await second.commit({})
        assert not second.failed and second.committed == {0}
        assert await _committed(world, topics.submissions, {0: 9}) == {0: 9}
        third = _batch(settings, producers)
        await third.send([_decision("b0")])
        await third.commit({})
        seen = await world.collect(topics.decisions, lambda r: b"b0" in _keys(r))
        assert sorted(r.key for r in seen if r.key is not None) == [b"a0", b"b0"]
    finally:
        await producers.stop_all()


async def test_a_task_fenced_after_its_offsets_were_sent_commits_none_of_them(world: KafkaWorld) -> None:
    async with _zombie_of_task_0(world) as (settings, transactions, zombie):
        topics = settings.topics
        await transactions.open(
            {0: {TopicPartition(topics.submissions, 0): 7}, 1: {TopicPartition(topics.submissions, 1): 3}}
        )
        await transactions.send([_decision("a0"), _decision("a1")])
        await zombie.start()  # bumps task 0's epoch while its transaction holds the offsets
        tallies = await transactions.commit({})
        assert transactions.failed == {0}
        assert len(tallies) == 1, "task 1 alone committed"
        seen = await world.collect(topics.decisions, lambda r: b"a1" in _keys(r))
        assert _keys(seen) == {b"a1"}
        assert await _committed(world, topics.submissions, {1: 3}) == {1: 3}


async def test_records_wait_for_the_offsets_so_the_broker_refuses_no_produce(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture
) -> None:
    """A transactional produce that reaches its partition while the coordinator still writes AddOffsetsToTxn
    is refused (NOT_ENOUGH_REPLICAS, since KIP-890's verification) and retried after a backoff; with the records
    handed over only once the offsets are in, batch after batch, none is (every transaction commits the group's
    offsets here)."""
    settings, producers = await _started(world, group_offsets_interval_ms=0)
    topics = settings.topics
    caplog.set_level(logging.WARNING, logger="aiokafka.producer.sender")
    try:
        for batch in range(20):
            transactions = _batch(settings, producers)
            consumed = {TopicPartition(topics.submissions, 0): batch + 1}
            await transactions.open({0: consumed})
            time.sleep(0.005)  # the engine decides: the loop waits for its hand-over, as EngineThread makes it
            await transactions.send([_decision(f"b{batch}-0")])
            await transactions.commit({0: consumed})
            assert transactions.committed == {0}
        refused = [r.getMessage() for r in caplog.records if "NotEnoughReplicas" in r.getMessage()]
        assert refused == []
        assert await _committed(world, topics.submissions, {0: 20}) == {0: 20}
    finally:
        await producers.stop_all()


async def test_a_record_without_a_subject_joins_the_next_transaction_early(world: KafkaWorld) -> None:
    """A dead letter goes where the default partitioner puts it; its partition is added to the task's next
    transaction like the others, so that transaction's markers also reach it."""
    settings, producers = await _started(world)
    topics = settings.topics
    try:
        first = _batch(settings, producers)
        dead_letter = OutputRecord(TopicRole.DEAD_LETTER, b"Application/x", b"{}", partition=0)
        await first.send([_decision("a0"), dead_letter])
        await first.commit({})
        assert first.committed == {0}
        written = producers.written[0]
        assert {tp.topic for tp in written} == {topics.decisions, topics.dead_letter}
        second = _batch(settings, producers)
        await second.send([_decision("b0")])
        await second.commit({})
        assert second.committed == {0}
        seen = await world.collect(topics.dead_letter, lambda r: b"Application/x" in _keys(r))
        assert _keys(seen) == {b"Application/x"}
    finally:
        await producers.stop_all()


async def _turn_off_transaction_verification(bootstrap: str) -> None:
    """Turn the broker's check of transactional produce (KIP-890) off; a dynamic broker setting."""
    setting = {"transaction.partition.verification.enable": "false"}
    async with admin_client(bootstrap) as admin:
        await admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", setting)])
    await asyncio.sleep(1.0)  # the broker applies it from its metadata log


@pytest.mark.parametrize("restarted", [False, True], ids=["same producer", "new producer of the task"])
async def test_data_a_lost_marker_left_open_is_closed_by_the_next_transaction(
    own_broker: LocalBroker, restarted: bool
) -> None:
    """What a broker killed while committing can leave: a task's dead letter whose transaction marker was never
    written, so read_committed readers of its partition stop there. Made here on a broker of the test's own with
    its produce check off and aiokafka told the partition is already in the transaction: the coordinator never
    hears of it and the commit writes no marker there. The task's next transaction must close it, whether its
    producer goes on or a new one (a new owner, a restart) takes the task over."""
    world = KafkaWorld(own_broker.bootstrap)
    await _turn_off_transaction_verification(own_broker.bootstrap)
    settings, producers = await _started(world)
    topics = settings.topics
    dead_letter = TopicPartition(topics.dead_letter, 0)
    try:
        for name in ("o0", "p0"):  # the second waits until the first's markers are all written
            settled = _batch(settings, producers)
            await settled.send([_decision(name)])
            await settled.commit({})
        before = await world.end_offsets(topics.dead_letter, 1)
        first = _batch(settings, producers)
        await first.send([_decision("a0")])
        producers.get(0)._txn_manager._txn_partitions.add(dead_letter)  # no AddPartitionsToTxn for it
        await first.send([OutputRecord(TopicRole.DEAD_LETTER, b"Application/x", b"{}", partition=0)])
        await first.commit({})
        assert first.committed == {0}
        ends = await world.end_offsets(topics.dead_letter, 1)
        held = await world.end_offsets(topics.dead_letter, 1, isolation="read_committed")
        assert (held[0], ends[0]) == (before[0], before[0] + 1), "the dead letter is held open"
        if restarted:
            await producers.start(0)  # a new producer: a higher epoch, and nothing known of what the last wrote

        second = _batch(settings, producers)
        await second.send([_decision("b0")])
        await second.commit({})
        assert second.committed == {0}
        # the markers are written a moment after the commit: a reader sees the dead letter once they are
        seen = await world.collect(topics.dead_letter, lambda r: b"Application/x" in _keys(r), timeout=15.0)
        assert _keys(seen) == {b"Application/x"}
        stable = await world.end_offsets(topics.dead_letter, 1, isolation="read_committed")
        assert stable[0] > ends[0], "the next transaction's marker closed the dead letter"
    finally:
        await producers.stop_all()


async def test_the_group_offsets_are_committed_once_per_interval_and_the_changelog_has_every_batch(
    world: KafkaWorld,
) -> None:
    """Every transaction records its offsets in the task's changelog partition (where a new owner starts); the
    group's offsets, two round trips before the first record, go only into the first transaction of a task and
    then one per interval."""
    settings, producers = await _started(world, group_offsets_interval_ms=600)
    topics = settings.topics
    sent: list[dict[TopicPartition, int]] = []
    metadata: set[str] = set()
    original = producers.get(0).send_offsets_to_transaction

    async def spy(offsets: dict[TopicPartition, tuple[int, str]], group_id: str) -> None:
        sent.append({tp: offset for tp, (offset, _) in offsets.items()})
        metadata.update(meta for _, meta in offsets.values())
        await original(offsets, group_id)

    producers.get(0).send_offsets_to_transaction = spy  # type: ignore[method-assign]
    try:
        for batch in range(1, 4):
            transactions = _batch(settings, producers)
            consumed = {TopicPartition(topics.submissions, 0): batch}
            await transactions.open({0: consumed})
            await transactions.send([_decision(f"b{batch}-0")])
            await transactions.commit({0: consumed})
            assert transactions.committed == {0}
            assert transactions.group_offsets == ({0} if batch == 1 else set())
        assert await _committed(world, topics.submissions, {0: 1}) == {0: 1}, "the group's trail"
        changelog = await world.collect(topics.changelog, lambda r: len(task_offsets_records(r)) == 3)
        assert [decode_task_offsets(r.value) for r in task_offsets_records(changelog)] == [
            {TopicPartition(topics.submissions, 0): batch} for batch in (1, 2, 3)
        ]
        await asyncio.sleep(0.6)
        transactions = _batch(settings, producers)
        consumed = {TopicPartition(topics.submissions, 0): 4}
        await transactions.open({0: consumed})
        await transactions.commit({0: consumed})
        assert transactions.group_offsets == {0}, "due again after the interval"
        assert sent == [{TopicPartition(topics.submissions, 0): n} for n in (1, 4)]
        assert metadata == {GROUP_METADATA}, "marked as this processor's commits"
        assert await _committed(world, topics.submissions, {0: 4}) == {0: 4}
    finally:
        await producers.stop_all()


async def test_a_restarted_task_producer_commits_the_group_offsets_in_its_first_transaction(
    world: KafkaWorld,
) -> None:
    """A task taken (again) starts a new producer: its first transaction brings the group's offsets up to date,
    which a kept task's owner compares with what it committed to learn that another instance ran the task."""
    settings, producers = await _started(world, group_offsets_interval_ms=60_000)
    topics = settings.topics
    try:
        for batch, restart in ((1, False), (2, False), (3, True)):
            if restart:
                await producers.start(0)
            transactions = _batch(settings, producers)
            consumed = {TopicPartition(topics.submissions, 0): batch}
            await transactions.open({0: consumed})
            await transactions.commit({0: consumed})
            assert transactions.group_offsets == ({0} if batch != 2 else set())
        assert await _committed(world, topics.submissions, {0: 3}) == {0: 3}
    finally:
        await producers.stop_all()
