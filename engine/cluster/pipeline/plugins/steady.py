"""Steady prioritizer (spec F1): keeps what is already decided."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from engine.cluster.fleet.ids import Ids
from engine.cluster.pipeline.framework import CandidateIndependent, EvalContext, ScoreResult

__all__ = ["SteadyPrioritizer"]


class SteadyPrioritizer(CandidateIndependent):
    """100 for clusters in the placement's current decisions, else 0."""

    NAME: ClassVar[str] = "Steady"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """Scores every candidate."""
        held = ctx.fleet.marked(ctx.held_ids())[candidates]
        return ScoreResult(held.astype(np.int64) * 100)
