"""Balance prioritizer (spec F2, F3): prefers clusters fewer other placements decided."""

from __future__ import annotations

import math
from typing import ClassVar

from engine.cluster.framework import EvalContext, ScoreResult

__all__ = ["BalancePrioritizer", "balance_score"]


def balance_score(count: int, max_count: int) -> int:
    """`2 * trunc(100.0 * (0.5 - count / maxCount))` in doubles; 100 for an unused cluster."""
    if count <= 0:
        return 100
    return 2 * math.trunc(100.0 * (0.5 - count / max_count))


class BalancePrioritizer:
    """Spreads placements over clusters by their decision counts in all other placements."""

    NAME: ClassVar[str] = "Balance"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Scores every candidate; the same (count, maxCount) pair is computed once."""
        others = ctx.others
        max_count = others.max_count()
        scores = dict.fromkeys(candidates, 100)
        if max_count <= 0:
            return ScoreResult(scores)
        memo: dict[int, int] = {}
        counts, own = others.snapshot()
        get = counts.get
        for name in candidates:
            count = get(name, 0)
            if count and name in own:
                count -= 1
            if count > 0:
                value = memo.get(count)
                if value is None:
                    value = memo[count] = balance_score(count, max_count)
                scores[name] = value
        return ScoreResult(scores)
