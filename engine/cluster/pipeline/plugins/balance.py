"""Balance prioritizer (spec F2, F3): prefers clusters fewer other placements decided."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.pipeline.framework import CandidateIndependent, EvalContext, ScoreResult

__all__ = ["BalancePrioritizer", "balance_scores"]


def balance_scores(counts: Iterable[int], max_count: int) -> NDArray[np.int64]:
    """`2 * trunc(100.0 * (0.5 - count / maxCount))` in doubles for each count (100 for count 0).

    numpy's doubles are the same IEEE operations, in the same order, as upstream's float64 arithmetic.
    """
    fractions = np.fromiter(counts, dtype=np.int64) / max_count
    scores: NDArray[np.int64] = np.trunc(100.0 * (0.5 - fractions)).astype(np.int64) * 2
    return scores


@lru_cache(maxsize=64)
def _table(max_count: int) -> NDArray[np.int64]:
    """The score of every count from 0 to max_count.

    A cold start needs a table for almost every maximum on the way up, thousands of entries each.
    """
    table = balance_scores(range(max_count + 1), max_count)
    table.flags.writeable = False
    return table


class BalancePrioritizer(CandidateIndependent):
    """Spreads placements over clusters by their decision counts in all other placements."""

    NAME: ClassVar[str] = "Balance"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """Scores every candidate: one table lookup per candidate."""
        others = ctx.others
        max_count = others.max_count()
        if max_count <= 0:
            return ScoreResult(np.full(len(candidates), 100, dtype=np.int64))
        return ScoreResult(_table(max_count)[others.over(ctx.fleet)[candidates]])
