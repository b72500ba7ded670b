"""Steady prioritizer (spec F1): keeps what is already decided."""

from __future__ import annotations

from itertools import repeat
from operator import add
from typing import ClassVar

from engine.cluster.framework import CandidateIndependent, EvalContext, ScoreResult

__all__ = ["SteadyPrioritizer"]


class SteadyPrioritizer(CandidateIndependent):
    """100 for clusters in the placement's current decisions, else 0."""

    NAME: ClassVar[str] = "Steady"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Scores every candidate."""
        return ScoreResult(self.add_weighted(ctx, dict.fromkeys(candidates, 0), 1))

    def add_weighted(self, ctx: EvalContext, totals: dict[str, int], weight: int) -> dict[str, int]:
        """totals + weight × score: only the held candidates move."""
        held = list(filter(totals.__contains__, ctx.current))  # over the decision, usually far smaller than totals
        totals.update(zip(held, map(add, map(totals.__getitem__, held), repeat(100 * weight)), strict=True))
        return totals
