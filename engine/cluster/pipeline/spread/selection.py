"""The spread selection loop: clusters are picked one at a time, each pick changing the next one's spread.

Every step takes the remaining candidates that pass the skew check of every `DoNotSchedule` term, scores
their topologies (less selected: higher), normalises those scores over them, and picks the highest base
total plus weighted spread score, the smallest name on a tie. Candidates of one class (same deepest
topology) share counts, checks and score, so a step compares only the best remaining member of each class:
a few classes (zones of regions) in plain Python, many (a topology per cluster) with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.cluster.pipeline.spread.counts import FewCounts, ManyCounts
from engine.cluster.pipeline.spread.terms import SpreadTerm
from engine.cluster.pipeline.spread.topology import Topologies

__all__ = ["Selection", "normalize", "select"]

_FEW = 64
"""Up to this many classes a step runs in plain Python (numpy's per-call cost dominates for a handful)."""

Scores = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Selection:
    """What the loop chose, as candidate positions, and why it stopped."""

    picked: list[int]
    """Candidate positions in selection order."""
    spread: Scores
    """Each candidate's normalised spread score: at the step that picked it, or in the closing pass (0 when
    the loop ran without it)."""
    blocked: int | None
    """When a skew check stopped the loop: the smallest index of a `DoNotSchedule` term that rejected a
    remaining cluster in the last step."""


class _Counts(Protocol):
    def check(self, live: list[int], weight: int) -> tuple[list[int], list[int], set[int]]: ...

    def raw(self, live: list[int]) -> list[int]: ...

    def add(self, cls: int) -> None: ...


def normalize(raw: Sequence[int]) -> list[int]:
    """-100 for the lowest raw score, 100 for the highest, linear (floored) between; all 0 when all equal."""
    low, high = min(raw), max(raw)
    if low == high:
        return [0] * len(raw)
    span = high - low
    return [-100 + (200 * (value - low)) // span for value in raw]


def select(
    terms: tuple[SpreadTerm, ...],
    topologies: Topologies,
    base: Scores,
    weight: int,
    limit: int | None,
    *,
    close: bool = True,
) -> Selection:
    """Run the loop over candidates with base totals `base` (their order is name order) at Spread weight
    `weight`, picking at most `limit` clusters (None: until none is left or a skew check blocks). Without
    `close` the unselected candidates keep a spread score of 0: their closing pass is explain data (S31, K4)."""
    count = len(base)
    of_class = topologies.of_class
    classes = int(of_class.max(initial=-1)) + 1
    # members of each class, best first: base total descending, then name
    sizes = np.bincount(of_class, minlength=classes)
    order: list[int] = np.lexsort((np.arange(count), -base, of_class)).tolist()
    end: list[int] = np.cumsum(sizes).tolist()
    next_member = [stop - size for stop, size in zip(end, sizes.tolist(), strict=True)]
    totals: list[int] = base.tolist()
    counts: _Counts = FewCounts(terms, topologies) if classes <= _FEW else ManyCounts(terms, topologies)
    spread = np.zeros(count, dtype=np.int64)
    picked: list[int] = []
    wanted = count if limit is None else min(limit, count)
    blocked: int | None = None
    live = list(range(classes))
    while len(picked) < wanted and live:
        allowed, raw, rejecting = counts.check(live, weight)
        if not allowed:
            blocked = min(rejecting)
            break
        scores = normalize(raw) if weight else [0] * len(allowed)
        best, best_total, best_score, chosen = -1, 0, 0, -1
        for cls, score in zip(allowed, scores, strict=True):
            member = order[next_member[cls]]
            total = totals[member] + weight * score
            if chosen < 0 or total > best_total or (total == best_total and member < chosen):
                best, best_total, best_score, chosen = cls, total, score, member
        picked.append(chosen)
        spread[chosen] = best_score
        next_member[best] += 1
        if next_member[best] == end[best]:
            live.remove(best)
        counts.add(best)
    if close and weight and live:  # the closing pass: every unselected candidate against the final counts, unchecked
        for cls, score in zip(live, normalize(counts.raw(live)), strict=True):
            spread[order[next_member[cls] : end[cls]]] = score
    return Selection(picked, spread, blocked)
