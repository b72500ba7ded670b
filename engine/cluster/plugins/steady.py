"""Steady prioritizer (spec F1): keeps what is already decided."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.framework import EvalContext, ScoreResult

__all__ = ["SteadyPrioritizer"]


class SteadyPrioritizer:
    """100 for clusters in the placement's current decisions, else 0."""

    NAME: ClassVar[str] = "Steady"
    RELATIVE: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Scores every candidate."""
        current = ctx.current
        scores = dict.fromkeys(candidates, 0)
        for name in current:
            if name in scores:
                scores[name] = 100
        return ScoreResult(scores)
