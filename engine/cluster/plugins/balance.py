"""Balance prioritizer (spec F2, F3): prefers clusters fewer other placements decided."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from functools import lru_cache
from itertools import repeat
from operator import add, sub
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.framework import CandidateIndependent, EvalContext, ScoreResult

__all__ = ["BalancePrioritizer", "balance_scores"]


def balance_scores(counts: Iterable[int], max_count: int) -> NDArray[np.int64]:
    """`2 * trunc(100.0 * (0.5 - count / maxCount))` in doubles for each count (100 for count 0).

    numpy's doubles are the same IEEE operations, in the same order, as upstream's float64 arithmetic.
    """
    fractions = np.fromiter(counts, dtype=np.int64) / max_count
    scores: NDArray[np.int64] = np.trunc(100.0 * (0.5 - fractions)).astype(np.int64) * 2
    return scores


@lru_cache(maxsize=64)
def _weighted_table(max_count: int, weight: int) -> tuple[int, ...]:
    """weight × score by count, up to max_count + 1 (a count that still includes the placement's own decision).

    Built in numpy: a cold start builds a table for almost every maximum on the way up, thousands of entries
    each, and a Python map over them was a twentieth of it.
    """
    return tuple((balance_scores(range(max_count + 2), max_count) * weight).tolist())


class BalancePrioritizer(CandidateIndependent):
    """Spreads placements over clusters by their decision counts in all other placements."""

    NAME: ClassVar[str] = "Balance"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Scores every candidate."""
        return ScoreResult(dict(zip(candidates, _scores(ctx, candidates, 1), strict=True)))

    def add_weighted(self, ctx: EvalContext, totals: dict[str, int], weight: int) -> dict[str, int]:
        """totals + weight × score, without a map of the scores in between."""
        return dict(zip(totals, map(add, totals.values(), _scores(ctx, totals, weight)), strict=True))


def _scores(ctx: EvalContext, names: Collection[str], weight: int) -> Iterator[int]:
    """weight × score of each name, in order, in C-level maps: one table lookup per (count, maxCount)."""
    others = ctx.others
    max_count = others.max_count()
    if max_count <= 0:
        return repeat(100 * weight, len(names))
    counts, own = others.snapshot()
    table = _weighted_table(max_count, weight)
    # the count of a cluster this placement holds includes it once: subtract True (1) for those
    return map(table.__getitem__, map(sub, map(counts.get, names, repeat(0)), map(own.__contains__, names)))
