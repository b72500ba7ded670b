"""Restored tasks' subjects handed out a slice at a time (streams/kafka/stale.py), without a broker."""

from __future__ import annotations

import pytest

from streams.kafka.stale import StaleTasks

HELD = {0: ["a3", "a1", "a2"], 1: ["b1", "b2"], 2: ["c1"]}


def _keys_of(asked: list[int]) -> object:
    def keys_of(task: int) -> list[str]:
        asked.append(task)
        return list(HELD[task])

    return keys_of


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
    stale, asked = StaleTasks(), []
    for task in restored:
        stale.add(task)
    got = [stale.take(eligible, limit, _keys_of(asked)) for _ in slices]  # type: ignore[arg-type]
    assert got == slices
    assert stale.tasks() == left
    assert bool(stale) == bool(left)
    assert sorted(asked) == sorted(set(asked)), "a task's keys are listed once, when its turn comes"


def test_a_task_restored_again_starts_over_with_every_key() -> None:
    stale, asked = StaleTasks(), []
    stale.add(0)
    assert stale.take({0}, 2, _keys_of(asked)) == ["a1", "a2"]  # type: ignore[arg-type]
    stale.add(0)  # its transaction aborted: restored again, the keys taken already are due again
    assert stale.take({0}, 5, _keys_of(asked)) == ["a1", "a2", "a3"]  # type: ignore[arg-type]
    assert asked == [0, 0] and not stale


def test_tasks_no_longer_owned_are_forgotten() -> None:
    stale = StaleTasks()
    for task in (0, 1, 2):
        stale.add(task)
    stale.keep({1, 5})
    assert stale.tasks() == {1}
