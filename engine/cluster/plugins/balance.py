"""Balance prioritizer (spec F2, F3): prefers clusters fewer other placements decided."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import ClassVar

from engine.cluster.framework import EvalContext, ScoreResult

__all__ = ["BalancePrioritizer", "balance_score"]


def balance_score(count: int, max_count: int) -> int:
    """`2 * trunc(100.0 * (0.5 - count / maxCount))` in doubles; 100 for an unused cluster."""
    if count <= 0:
        return 100
    return 2 * math.trunc(100.0 * (0.5 - count / max_count))


@lru_cache(maxsize=64)
def _score_table(max_count: int) -> tuple[int, ...]:
    """Scores by count, up to max_count + 1 (a count that still includes the placement's own decision)."""
    return (100, *(balance_score(count, max_count) for count in range(1, max_count + 2)))


class BalancePrioritizer:
    """Spreads placements over clusters by their decision counts in all other placements."""

    NAME: ClassVar[str] = "Balance"
    RELATIVE: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Scores every candidate; the same (count, maxCount) pair is computed once."""
        others = ctx.others
        max_count = others.max_count()
        if max_count <= 0:
            return ScoreResult(dict.fromkeys(candidates, 100))
        counts, own = others.snapshot()
        table = _score_table(max_count)
        get = counts.get
        scores = {name: table[get(name, 0)] for name in candidates}
        for name in own:  # their count includes this placement once
            if name in scores:
                scores[name] = table[get(name, 0) - 1]
        return ScoreResult(scores)
