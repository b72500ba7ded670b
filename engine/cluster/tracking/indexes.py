"""In-memory indexes over tracked placements: who to re-decide (spec L2–L4) and Balance counts (F2).

Maintained only through `track`. The placements holding a cluster are found by one pass over the tracked
decisions per batch rather than through a cluster -> placements map: keeping that map up to date was a tenth
of a cold start (900,000 links for 10,000 placements) and tens of megabytes, the pass takes milliseconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Fleet, Ids, KnownIds

__all__ = ["DecisionCounts", "OthersView", "PlacementIndex", "TrackedPlacement"]


@dataclass(frozen=True, slots=True)
class TrackedPlacement:
    """What the indexes remember about one placement."""

    namespace: str
    cluster_sets: frozenset[str]
    score_names: frozenset[str] | None
    """Score resources it reads (AddOn prioritizers and `scores()` literals); None means any."""
    decided: frozenset[str]
    decided_ids: KnownIds | None = field(default=None, compare=False)
    """`decided` as fleet ids, when the engine has them (spares converting a new decision's names)."""


class DecisionCounts:
    """How many tracked placements decided each cluster, and how many clusters have each count.

    Counting uses Counter's C loop; the counts are also kept as an array over the fleet's ids, which Balance
    reads. The per-count tally behind the maximum is kept step by step for the small changes of a re-decision (a
    cluster or two per placement). A large change (a new placement's whole decision) drops it; the maximum is
    then read from the array in numpy passes while large changes keep coming (a cold start), and the tally is
    rebuilt in C once a run of small ones shows they are back.
    """

    _STEPWISE = 16
    """Changes of at most this many clusters update the tally in place (larger ones drop it) and the counts
    array cluster by cluster (larger ones through an id array)."""
    _REBUILD_AFTER = 64
    """Small changes in a row after which a dropped tally is rebuilt (a cold start mixes small and large ones)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._levels: Counter[int] | None = Counter()
        """How many clusters have each count (counts > 0 only); None: dropped by a large change."""
        self._highest = 0
        self._top: tuple[int, int] | None = None
        """While the tally is dropped: the largest count and how many clusters have it, None until read."""
        self._small = 0
        """Small changes in a row: the tally is worth rebuilding after enough of them."""
        self._fleet: Fleet | None = None
        self._by_id: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        """The counts over `_fleet`'s ids (Balance reads them as an array), kept in step with `counts`."""
        self._pending: list[frozenset[str]] | None = None
        """Inside `deferred`: decisions of placements that had none, not counted yet."""

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Count the decisions of placements that had none on leaving, all together: a restore adds 100,000
        decisions of about 90 clusters each, but shares equal ones (14,000 distinct there), so counting each
        distinct decision once, times how many placements hold it, is a seventh of the work."""
        self._pending = []
        try:
            yield
        finally:
            self._count_pending()
            self._pending = None

    def _count_pending(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        # a frozenset keeps its hash once computed, and equal decisions are mostly one shared object
        for decided, times in Counter(pending).items():
            self.counts.update(decided if times == 1 else dict.fromkeys(decided, times))
        # what is derived from the counts is rebuilt when next read
        self._fleet, self._levels, self._top, self._small = None, None, None, 0

    def replace(self, old: frozenset[str], new: frozenset[str], new_ids: KnownIds | None = None) -> None:
        """One placement's decision changed from `old` to `new`; `new_ids`, when given, is `new` as the ids of
        the fleet with that serial (a new decision then steps the array without converting its names)."""
        if self._pending is not None:
            if not old:
                if new:
                    self._pending.append(new)
                return
            self._count_pending()  # a removal must see every count it takes from
        removed, added = (old - new, new - old) if old else ((), new)
        if not removed and not added:
            return
        counts = self.counts
        counts.update(added)
        for cluster in removed:
            left = counts[cluster] - 1
            if left > 0:
                counts[cluster] = left
            else:
                del counts[cluster]
        fleet = self._fleet
        if fleet is not None:
            if added is new and new_ids is not None and new_ids[0] == fleet.serial:
                self._by_id[new_ids[1]] += 1  # ids of a set are distinct: no repeated index
            else:
                self._step_array(added, 1)
            self._step_array(removed, -1)
        self._top = None
        small = len(removed) + len(added) <= self._STEPWISE
        self._small = self._small + 1 if small else 0
        levels = self._levels
        if levels is None:
            return
        if not small:
            self._levels = None
            return
        for cluster in added:
            now = counts[cluster]
            _move(levels, now - 1, now)
            self._highest = max(self._highest, now)
        for cluster in removed:
            now = counts.get(cluster, 0)
            _move(levels, now + 1, now)
        while self._highest and not levels.get(self._highest):
            self._highest -= 1

    def _step_array(self, clusters: Collection[str], step: int) -> None:
        """Move the array's counts of `clusters` by `step`: one by one for the few clusters of a re-decision,
        where converting them to an id array would cost more than the update."""
        assert self._fleet is not None
        by_id = self._by_id
        if len(clusters) > self._STEPWISE:
            by_id[self._fleet.ids(clusters)] += step  # ids of a set are distinct: no repeated index
            return
        position = self._fleet.position
        for cluster in clusters:
            index = position.get(cluster)
            if index is not None:
                by_id[index] += step

    def over(self, fleet: Fleet) -> NDArray[np.int64]:
        """The counts by fleet id (the array is kept and updated in place: read it, do not keep it)."""
        if fleet is not self._fleet:
            self._fleet = fleet
            self._by_id = fleet.values(self.counts, 0).astype(np.int64)
        return self._by_id

    def top(self) -> tuple[int, int]:
        """The largest count and how many clusters have it; (0, 0) when nothing is decided."""
        levels = self._levels
        if levels is None:
            if self._top is not None:
                return self._top
            by_id = self._by_id
            # the array holds every counted cluster when as many of its entries are non-zero
            covered = self._fleet is not None and np.count_nonzero(by_id) == len(self.counts)
            if covered and self._small < self._REBUILD_AFTER:
                highest = int(by_id.max()) if len(by_id) else 0
                self._top = (highest, int(np.count_nonzero(by_id == highest)) if highest else 0)
                return self._top
            levels = self._levels = Counter(self.counts.values())
            self._highest = max(levels, default=0)
        return self._highest, levels.get(self._highest, 0)

    def max_without(self, own: frozenset[str], own_counts: NDArray[np.int64] | None = None) -> int:
        """The maximum after removing one placement's decisions `own` (each cluster counted once);
        `own_counts`, when given, are the counts of every cluster in `own`."""
        highest, at_top = self.top()
        if highest == 0 or at_top > len(own):
            return highest
        if own_counts is None:
            own_at_top = list(map(self.counts.__getitem__, own)).count(highest)
        else:
            own_at_top = int(np.count_nonzero(own_counts == highest))
        return highest if own_at_top < at_top else highest - 1


def _move(levels: Counter[int], before: int, after: int) -> None:
    """One cluster's count went from `before` to `after`."""
    if before:
        left = levels[before] - 1
        if left:
            levels[before] = left
        else:
            del levels[before]
    if after:
        levels[after] += 1


class OthersView:
    """BalanceCounts of one placement: the tracked counts minus its own tracked decision.

    `own_ids`, the decision as `fleet`'s ids, spare converting hundreds of names in every evaluation.
    """

    def __init__(
        self, counts: DecisionCounts, own: frozenset[str], fleet: Fleet | None = None, own_ids: Ids | None = None
    ) -> None:
        self._counts = counts.counts
        self._all = counts
        self._own = own
        self._fleet = fleet
        self._own_ids = own_ids
        self._max: int | None = None

    def count(self, cluster: str) -> int:
        """Decisions of other placements that include `cluster`."""
        count = self._counts.get(cluster, 0)
        return count - 1 if cluster in self._own else count

    def _ids(self, fleet: Fleet) -> Ids:
        return self._own_ids if fleet is self._fleet and self._own_ids is not None else fleet.ids(self._own)

    def over(self, fleet: Fleet) -> NDArray[np.int64]:
        """Other placements' counts by fleet id: the tracked counts less this placement's own decision."""
        counts = self._all.over(fleet).copy()
        counts[self._ids(fleet)] -= 1
        return counts

    def max_count(self) -> int:
        """The largest count over other placements' decisions."""
        if self._max is None:
            own_counts = None
            if self._fleet is not None:
                ids = self._ids(self._fleet)
                if len(ids) == len(self._own):  # every own cluster is in the fleet, so the array has them all
                    own_counts = self._all.over(self._fleet)[ids]
            self._max = self._all.max_without(self._own, own_counts)
        return self._max


class PlacementIndex:
    """Placements by namespace and by score resource, their decisions, and decision counts (with the decisions
    of placements other instances own)."""

    def __init__(self) -> None:
        self.tracked: dict[str, TrackedPlacement] = {}
        self.by_namespace: dict[str, set[str]] = {}
        self.by_score: dict[str, set[str]] = {}
        self.any_score: set[str] = set()
        self.counts = DecisionCounts()
        self.peers: dict[str, frozenset[str]] = {}
        """Decisions of placements other instances own: counted for Balance (F2 counts every other placement),
        never re-decided here. Tracking a placement supersedes its peer entry."""

    def observe_peer(self, key: str, decided: frozenset[str]) -> None:
        """Another instance's placement decided `decided` (empty: nothing, or it is gone); ignored while the
        placement is tracked here, as this instance's own state is the newer."""
        if key in self.tracked:
            return
        old = self.peers.pop(key, frozenset())
        if decided:
            self.peers[key] = decided
        self.counts.replace(old, decided)

    def release(self, key: str) -> None:
        """Stop tracking a placement another instance takes over; its decision stays counted, as a peer's."""
        entry = self.tracked.pop(key, None)
        if entry is None:
            return
        self._unlink(key, entry)
        if entry.decided:
            self.peers[key] = entry.decided

    def drop_peers(self, dropped: Callable[[str], bool]) -> None:
        """Stop counting the peer entries of the placements `dropped` names."""
        for key in [key for key in self.peers if dropped(key)]:
            self.counts.replace(self.peers.pop(key), frozenset())

    def remove(self, key: str) -> None:
        """Forget a placement."""
        old = self.tracked.pop(key, None)
        if old is not None:
            self._unlink(key, old)
            self.counts.replace(old.decided, frozenset())

    def _unlink(self, key: str, old: TrackedPlacement) -> None:
        """Drop `key` from the indexes of `old`."""
        self.by_namespace.get(old.namespace, set()).discard(key)
        if old.score_names is None:
            self.any_score.discard(key)
        else:
            for name in old.score_names:
                self.by_score.get(name, set()).discard(key)

    def put(self, key: str, entry: TrackedPlacement) -> None:
        """Add or replace a placement."""
        old = self.tracked.get(key)
        if old == entry:
            return
        self.tracked[key] = entry
        if old is not None and (old.namespace, old.cluster_sets, old.score_names) == (
            entry.namespace,
            entry.cluster_sets,
            entry.score_names,
        ):  # a re-decision: only the decision moved
            self.counts.replace(old.decided, entry.decided, entry.decided_ids)
            return
        if old is not None:
            self._unlink(key, old)
        else:
            self.counts.replace(self.peers.pop(key, frozenset()), frozenset())
        self.by_namespace.setdefault(entry.namespace, set()).add(key)
        if entry.score_names is None:
            self.any_score.add(key)
        else:
            for name in entry.score_names:
                self.by_score.setdefault(name, set()).add(key)
        self.counts.replace(old.decided if old is not None else frozenset(), entry.decided, entry.decided_ids)

    def holding(self, clusters: Collection[str]) -> dict[str, set[str]]:
        """The placements whose tracked decision holds each of `clusters`: one pass over every placement."""
        out: dict[str, set[str]] = {name: set() for name in clusters}
        if not out:
            return out
        wanted = frozenset(out)
        for key, entry in self.tracked.items():
            for name in wanted.intersection(entry.decided):
                out[name].add(key)
        return out

    def others(self, key: str, fleet: Fleet | None = None, decided_ids: Ids | None = None) -> OthersView:
        """Balance input for `key`: everything tracked except its own decision; `decided_ids`, when given, is
        that decision as `fleet`'s ids."""
        own = self.tracked.get(key)
        return OthersView(self.counts, own.decided if own is not None else frozenset(), fleet, decided_ids)

    def in_namespaces(self, namespaces: set[str], sets: set[str] | None) -> set[str]:
        """Placements in the namespaces whose clusterSets is empty or names one of `sets` (None: any)."""
        out: set[str] = set()
        for namespace in namespaces:
            for key in self.by_namespace.get(namespace, ()):
                wanted = self.tracked[key].cluster_sets
                if sets is None or not wanted or wanted & sets:
                    out.add(key)
        return out
