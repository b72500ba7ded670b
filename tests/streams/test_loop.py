"""The processing loop on an in-memory Kafka (tests/streams/fake_kafka.py): what one batch commits, what an
aborted task transaction leads to, and what a stop leaves."""

from __future__ import annotations

from collections import Counter

from aiokafka import TopicPartition

from tests.streams.fake_kafka import FakeBroker
from tests.streams.shell_harness import Shell, placement, settings

NAMES = [f"p{i}" for i in range(8)]


def _shell(**fields: object) -> Shell:
    return Shell(FakeBroker(), settings(**fields))


def _subject_positions(shell: Shell) -> dict[int, int]:
    """Each task's committed position in the submissions topic."""
    return {tp.partition: at for tp, at in shell.commits.committed.items() if tp.topic == shell.topics.submissions}


def _log_ends(shell: Shell) -> dict[int, int]:
    topic = shell.topics.submissions
    return {p: len(shell.broker.log(TopicPartition(topic, p))) for p in range(2)}


async def test_a_batch_commits_each_task_with_its_offsets() -> None:
    shell = _shell()
    shell.produce(*(placement(name) for name in NAMES))
    await shell.start()
    await shell.run_until_idle()
    assert sorted(shell.decided()) == sorted(f"Placement/apps/{n}".encode() for n in NAMES)
    assert _subject_positions(shell) == _log_ends(shell)
    group = {tp.partition: at for tp, (at, _) in shell.broker.group_offsets.items()}
    assert group == _log_ends(shell), "a task's first transaction commits the group's offsets too"
    assert shell.sample("placement_transactions_total", {"outcome": "aborted"}) == 0
    assert shell.observer.progress.records_done == len(NAMES) + 6  # and the six inventory records
    assert shell.observer.health.ready()


async def test_a_record_the_broker_refuses_is_narrowed_to_then_dead_lettered() -> None:
    shell = _shell(max_task_aborts=2)
    poison = b"Placement/apps/p0"  # first on its partition: a restore of its task brings no state to re-decide
    shell.broker.refused = lambda topic, key: topic == shell.topics.decisions and key == poison
    shell.produce(*(placement(name) for name in NAMES))
    await shell.start()
    await shell.run_until_idle()
    task = shell.ctx.keys.task_of(poison.decode())
    decided = Counter(shell.decided())
    assert set(decided) == {f"Placement/apps/{n}".encode() for n in NAMES} - {poison}
    assert set(decided.values()) == {1}, "an aborted transaction's decisions never show"
    dead = shell.broker.keys(shell.topics.dead_letter)
    assert dead == [poison]
    aborted = [i for i, outcome in shell.broker.outcomes if outcome == "aborted"]
    assert aborted == [f"{shell.settings.kafka.group_id}-tasks-{task}"] * 2
    assert shell.sample("placement_transactions_total", {"outcome": "aborted"}) == 2
    assert _subject_positions(shell) == _log_ends(shell), "past the dead-lettered record"
    assert not shell.ctx.guard.isolating
    assert not shell.observer.health.failing_tasks


async def test_a_fenced_task_is_restored_and_its_records_consumed_again() -> None:
    shell = _shell()
    fenced = f"{shell.settings.kafka.group_id}-tasks-1"
    fences = []

    def fence_once(transactional_id: str) -> None:
        if transactional_id == fenced and not fences:
            fences.append(transactional_id)
            shell.broker.epochs[fenced] += 1  # a zombie's producer started meanwhile

    shell.broker.committing = fence_once
    shell.produce(*(placement(name) for name in NAMES))
    await shell.start()
    await shell.run_until_idle()
    decided = Counter(shell.decided())
    assert sorted(decided) == sorted(f"Placement/apps/{n}".encode() for n in NAMES)
    assert set(decided.values()) == {1}
    assert [o for _, o in shell.broker.outcomes].count("aborted") == 0, "a fenced commit is no abort marker"
    assert shell.sample("placement_transactions_total", {"outcome": "aborted"}) == 1
    assert not shell.ctx.guard.isolating, "a fence says nothing about the records"
    assert _subject_positions(shell) == _log_ends(shell)


async def test_a_stop_during_a_batch_leaves_the_next_batch_uncommitted() -> None:
    shell = _shell(kafka={"max_batch_records": 2})
    subject = TopicPartition(shell.topics.submissions, 0)
    names = [n for n in (f"s{i}" for i in range(40)) if shell.ctx.keys.task_of(f"Placement/apps/{n}") == 0][:4]
    shell.produce(*(placement(name) for name in names))
    await shell.start()
    polls = []

    def stop_at_second(records: dict[TopicPartition, object]) -> None:
        if subject in records:
            polls.append(records)
            if len(polls) == 2:
                shell.ctx.stop.set()

    shell.consumer.fetched = stop_at_second
    await shell.loop.run()
    assert sorted(shell.decided()) == sorted(f"Placement/apps/{n}".encode() for n in names[:2])
    assert shell.commits.committed[subject] == 2
    assert shell.broker.group_offsets[subject][0] == 2, "the next owner starts at the stopped batch"
