"""One batch's task transactions and what the task commits make of their outcome, on the in-memory Kafka of
tests/streams/fake_kafka.py (the real-broker twin: tests/integration/test_task_transactions.py)."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from engine.runtime import OutputRecord
from streams.kafka.commits import GROUP_COMMIT_TIMEOUT_SECONDS
from tests.streams.fake_kafka import FakeBroker
from tests.streams.shell_harness import Shell, settings
from topics.names import TopicRole


def _decision(task: int, name: str) -> OutputRecord:
    """A decision bound to `task` (the record names its partition)."""
    return OutputRecord(TopicRole.DECISIONS, name.encode(), b"{}", partition=task)


async def _shell(**kafka: object) -> Shell:
    shell = Shell(FakeBroker(), settings(kafka=kafka))
    await shell.start()
    return shell


def _at(shell: Shell, task: int, offset: int) -> dict[int, dict[TopicPartition, int]]:
    return {task: {TopicPartition(shell.topics.submissions, task): offset}}


async def test_a_finished_task_commits_while_another_stays_open() -> None:
    shell = await _shell()
    transactions = shell.ctx.transactions()
    await transactions.send([_decision(0, "a0"), _decision(1, "a1")])
    transactions.finish(0, _at(shell, 0, 7)[0])
    tallies = await transactions.commit({})
    assert shell.decided() == [b"a0", b"a1"]
    assert transactions.committed == {0, 1} and len(tallies) == 2
    assert shell.broker.group_offsets == {TopicPartition(shell.topics.submissions, 0): (7, "placement-stream")}


async def test_an_open_transaction_shows_nothing() -> None:
    shell = await _shell()
    transactions = shell.ctx.transactions()
    await transactions.send([_decision(0, "a0")])
    assert shell.decided() == []
    await transactions.commit({})
    assert shell.decided() == [b"a0"]


@pytest.mark.parametrize("fenced_task", [0, 1])
async def test_a_fenced_task_aborts_alone_and_its_positions_stay(fenced_task: int) -> None:
    shell = await _shell()
    other = 1 - fenced_task
    fenced = shell.ctx.tasks.transactional_id(fenced_task)
    shell.broker.committing = lambda tid: shell.broker.epochs.__setitem__(fenced, 99) if tid == fenced else None
    transactions = shell.ctx.transactions()
    offsets = {**_at(shell, 0, 5), **_at(shell, 1, 9)}
    await transactions.open(offsets)
    await transactions.send([_decision(0, "a0"), _decision(1, "a1")])
    for tally in await transactions.commit(offsets):
        shell.observer.transaction_committed(tally)
    aborted = shell.commits.settle(transactions, offsets)
    assert aborted == [fenced_task]
    assert shell.decided() == [f"a{other}".encode()]
    tp = TopicPartition(shell.topics.submissions, other)
    assert shell.commits.committed == {tp: offsets[other][tp]}, "a position advances only with its commit"
    assert set(shell.broker.group_offsets) == {tp}
    assert shell.observer.health.failing_tasks == {fenced_task}
    assert shell.sample("placement_transactions_total", {"outcome": "aborted"}) == 1
    assert shell.sample("placement_transactions_total", {"outcome": "committed"}) == 1
    assert shell.sample("placement_records_produced_total", {"topic": shell.topics.decisions}) == 1


async def test_positions_the_group_lacks_are_committed_outside_a_transaction() -> None:
    shell = await _shell(group_offsets_interval_ms=3_600_000)
    tp = TopicPartition(shell.topics.submissions, 0)
    for offset in (3, 8):  # the task's first transaction carries the group's offsets, the next does not
        transactions = shell.ctx.transactions()
        await transactions.commit(_at(shell, 0, offset))
        assert shell.commits.settle(transactions, _at(shell, 0, offset)) == []
    assert shell.broker.group_offsets[tp][0] == 3
    assert shell.commits.group_behind == {tp}
    consumer = shell.clients.consumer
    await shell.commits.commit_group_offsets(consumer, GROUP_COMMIT_TIMEOUT_SECONDS, all_behind=False)
    assert shell.broker.group_offsets[tp][0] == 3, "not due yet"
    await shell.commits.commit_group_offsets(consumer, GROUP_COMMIT_TIMEOUT_SECONDS, all_behind=True)
    assert shell.broker.group_offsets[tp] == (8, "placement-stream")
    assert shell.commits.group_behind == set()


async def test_records_of_no_owned_task_are_left_loose() -> None:
    shell = await _shell()
    await shell.ctx.tasks.stop(1)
    transactions = shell.ctx.transactions()
    await transactions.send([_decision(0, "a0"), _decision(1, "a1")])
    await transactions.commit({})
    assert [r.key for r in transactions.loose] == [b"a1"]
    assert shell.decided() == [b"a0"]
