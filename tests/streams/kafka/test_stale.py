"""Restored tasks' subjects handed out a slice at a time (streams/kafka/stale.py), without a broker."""

from __future__ import annotations

import pytest

from streams.kafka.stale import StaleTasks

RESTORED = {0: ["a3", "a1", "a2"], 1: ["b1", "b2"], 2: ["c1"]}


@pytest.mark.parametrize(
    ("restored", "eligible", "limit", "slices", "left"),
    [
        ([0, 1, 2], {0, 1, 2}, 10, [["a1", "a2", "a3", "b1", "b2", "c1"]], set()),
        ([0, 1, 2], {0, 1, 2}, 2, [["a1", "a2"], ["a3", "b1"], ["b2", "c1"]], set()),
        ([0, 1, 2], {0, 1, 2}, 4, [["a1", "a2", "a3", "b1"], ["b2", "c1"]], set()),
        # a task restored after the turn's snapshot waits for the next turn's inventory read
        ([0, 1], {1}, 5, [["b1", "b2"], []], {0}),
        ([], {0}, 5, [[]], set()),
    ],
    ids=["one-slice", "two-per-slice", "across-tasks", "not-eligible-yet", "nothing-restored"],
)
def test_slices_cover_each_restored_key_once(
    restored: list[int], eligible: set[int], limit: int, slices: list[list[str]], left: set[int]
) -> None:
    stale = StaleTasks()
    for task in restored:
        stale.add(task, RESTORED[task])
    got = [stale.take(eligible, limit) for _ in slices]
    assert got == slices
    assert stale.tasks() == left
    assert bool(stale) == bool(left)


def test_a_task_restored_again_starts_over_with_every_key() -> None:
    stale = StaleTasks()
    stale.add(0, RESTORED[0])
    assert stale.take({0}, 2) == ["a1", "a2"]
    stale.add(0, RESTORED[0])  # its transaction aborted: restored again, the keys taken already are due again
    assert stale.take({0}, 5) == ["a1", "a2", "a3"]
    assert not stale


def test_only_the_restored_keys_are_due_not_those_created_later() -> None:
    """The keys are fixed at the restore: a subject a batch created afterwards was decided on fresh inventory."""
    stale, held = StaleTasks(), ["a2", "a1"]
    stale.add(0, held)
    held.append("a0")  # a batch created a subject of the task after its restore
    assert stale.take({0}, 10) == ["a1", "a2"]


def test_a_task_restored_empty_has_nothing_due() -> None:
    """A cold start restores every task empty: the loop then has no slice to run and its poll need not hurry."""
    stale = StaleTasks()
    stale.add(0, [])
    stale.add(1, ["b1"])
    assert stale.tasks() == {1}
    stale.add(1, [])  # restored again, now empty: what it had before is gone with it
    assert not stale


def test_tasks_no_longer_owned_are_forgotten() -> None:
    stale = StaleTasks()
    for task in (0, 1, 2):
        stale.add(task, RESTORED[task])
    stale.keep({1, 5})
    assert stale.tasks() == {1}


@pytest.mark.parametrize(
    ("restored", "deferred", "due"),
    [
        ([], ["a9", "a0"], ["a9", "a0"]),  # nothing restored: the deferred keys alone, in the order given
        (["a3", "a1"], ["a0", "a1"], ["a1", "a3", "a0"]),  # after the restored ones, each key once
        ([], [], []),  # nothing deferred: the task is not kept
    ],
    ids=["deferred-only", "after-the-restored", "nothing"],
)
def test_deferred_keys_are_due_after_the_pending_ones_each_once(
    restored: list[str], deferred: list[str], due: list[str]
) -> None:
    stale = StaleTasks()
    stale.add(0, restored)
    stale.defer(0, deferred)
    assert stale.tasks() == ({0} if due else set())
    assert stale.take({0}, 10) == due
