"""Restored tasks whose subjects are still to be re-decided, handed to the loop a slice at a time.

A task taken over is re-decided once the inventory has been read to its end after its restore (its previous
owner may have decided on newer inventory than this instance had then). Re-deciding every subject of a large
task in one batch held up everything else: an answer that the inventory changed while no instance ran costs
about as much as a first decision (a NoSelect taint that changes 2,042 of 10,000 decisions is 1.3 s of engine
work), and no submission, inventory change or timer was decided meanwhile. So the loop re-decides at most a
batch's worth of subjects per turn, each slice on the inventory read to its end in that turn, and decides the
records polled meanwhile between the slices. A restored subject such a batch decided is re-decided again by its
slice later; that publishes nothing unless its answer changed.

Only the subjects the restore brought are due: the keys are taken when the task is restored. Subjects that
batches create afterwards were decided on the inventory read to its end already; listing a task's keys only when
its turn came re-decided them too, and in a cold start (every task restored empty) that was a thousand first
decisions evaluated again after each of the first batches.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["StaleTasks"]


class StaleTasks:
    """The restored tasks and the keys each still has to re-decide."""

    def __init__(self) -> None:
        self._keys: dict[int, list[str]] = {}
        """Per task, the restored keys not re-decided yet, in key order."""

    def __bool__(self) -> bool:
        return bool(self._keys)

    def tasks(self) -> frozenset[int]:
        """The tasks with subjects still to be re-decided."""
        return frozenset(self._keys)

    def add(self, task: int, restored: Iterable[str]) -> None:
        """The task was restored (again) with these keys: all of them are due, whatever was taken before. A task
        restored empty has nothing to re-decide and is not kept."""
        keys = sorted(restored)
        if keys:
            self._keys[task] = keys
        else:
            self._keys.pop(task, None)

    def defer(self, task: int, keys: Iterable[str]) -> None:
        """These keys of the task are due as well, after those already pending: costly subjects a batch left
        undecided (platform P15)."""
        pending = self._keys.setdefault(task, [])
        known = set(pending)
        pending += [key for key in keys if key not in known]
        if not pending:
            del self._keys[task]

    def keep(self, tasks: Iterable[int]) -> None:
        """Forget the tasks not among `tasks` (no longer owned)."""
        kept = set(tasks)
        for task in [task for task in self._keys if task not in kept]:
            del self._keys[task]

    def take(self, eligible: Iterable[int], limit: int) -> list[str]:
        """Up to `limit` keys of the `eligible` tasks, task by task in partition order, no longer pending once
        taken; a task with none left is done."""
        taken: list[str] = []
        for task in sorted(set(eligible) & self._keys.keys()):
            if len(taken) >= limit:
                break
            keys = self._keys[task]
            room = limit - len(taken)
            taken += keys[:room]
            del keys[:room]
            if not keys:
                del self._keys[task]
        return taken
