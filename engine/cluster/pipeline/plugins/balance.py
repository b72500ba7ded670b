"""Balance prioritizer (spec F2, F3): prefers clusters fewer other placements decided."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.pipeline.framework import CandidateIndependent, EvalContext, ScoreResult

__all__ = ["BalancePrioritizer", "balance_scores"]


def balance_scores(counts: NDArray[np.int64] | Iterable[int], max_count: int) -> NDArray[np.int64]:
    """`2 * trunc(100.0 * (0.5 - count / maxCount))` in doubles for each count (100 for count 0).

    numpy's doubles are the same IEEE operations, in the same order, as upstream's float64 arithmetic. Computed
    for the candidates in every evaluation rather than looked up in a table per maximum: a cold start raises the
    maximum thousands of times, and a table is as long as the maximum, so at 100,000 Placements building the
    tables took 9 % of the start (a sum quadratic in the final maximum).
    """
    values = counts if isinstance(counts, np.ndarray) else np.fromiter(counts, dtype=np.int64)
    work = values / max_count  # a new float64 array, worked on in place
    np.subtract(0.5, work, out=work)
    np.multiply(100.0, work, out=work)
    np.trunc(work, out=work)
    scores: NDArray[np.int64] = work.astype(np.int64)
    scores *= 2
    return scores


class BalancePrioritizer(CandidateIndependent):
    """Spreads placements over clusters by their decision counts in all other placements."""

    NAME: ClassVar[str] = "Balance"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """Scores every candidate from its count."""
        others = ctx.others
        max_count = others.max_count()
        if max_count <= 0:
            return ScoreResult(np.full(len(candidates), 100, dtype=np.int64))
        return ScoreResult(balance_scores(others.over(ctx.fleet)[candidates], max_count))
