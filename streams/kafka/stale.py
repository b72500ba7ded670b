"""Restored tasks whose subjects are still to be re-decided, handed to the loop a slice at a time.

A task taken over is re-decided once the inventory has been read to its end after its restore (its previous
owner may have decided on newer inventory than this instance had then). Re-deciding every subject of a large
task in one batch held up everything else: an answer that the inventory changed while no instance ran costs
about as much as a first decision (a NoSelect taint that changes 2,042 of 10,000 decisions is 1.3 s of engine
work), and no submission, inventory change or timer was decided meanwhile. So the loop re-decides at most a
batch's worth of subjects per turn, each slice on the inventory read to its end in that turn, and decides the
records polled meanwhile between the slices. A subject such a batch decided is re-decided again by its slice
later; that publishes nothing unless its answer changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["StaleTasks"]


class StaleTasks:
    """The restored tasks and, once a task's turn has come, its keys still to be re-decided."""

    def __init__(self) -> None:
        self._keys: dict[int, list[str] | None] = {}
        """Per task, its keys not re-decided yet; None until its turn comes (then every key it holds)."""

    def __bool__(self) -> bool:
        return bool(self._keys)

    def tasks(self) -> frozenset[int]:
        """The tasks with subjects still to be re-decided."""
        return frozenset(self._keys)

    def add(self, task: int) -> None:
        """The task was restored (again): every subject it holds is to be re-decided, whatever was taken before."""
        self._keys[task] = None

    def keep(self, tasks: Iterable[int]) -> None:
        """Forget the tasks not among `tasks` (no longer owned)."""
        kept = set(tasks)
        for task in [task for task in self._keys if task not in kept]:
            del self._keys[task]

    def take(self, eligible: Iterable[int], limit: int, keys_of: Callable[[int], list[str]]) -> list[str]:
        """Up to `limit` keys of the `eligible` tasks, task by task in partition order, no longer pending once
        taken. `keys_of(task)` lists a task's keys when its turn comes; a task with none left is done."""
        taken: list[str] = []
        for task in sorted(set(eligible) & self._keys.keys()):
            if len(taken) >= limit:
                break
            keys = self._keys[task]
            if keys is None:
                keys = self._keys[task] = sorted(keys_of(task))
            room = limit - len(taken)
            taken += keys[:room]
            del keys[:room]
            if not keys:
                del self._keys[task]
        return taken
