"""Spread filter and prioritizer: spread the selected clusters evenly over topologies (zones, regions, ...).

The filter validates the terms and removes the clusters that have no value for a `DoNotSchedule` term (or for
a term before it: topologies are paths). The prioritizer's score depends on what was already selected, so it
is computed inside the selection loop (`engine.cluster.pipeline.spread.selection`); here it only takes its place
among the prioritizers.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar

import numpy as np

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.framework import EvalContext, FilterResult, ScoreResult, ValueRange
from engine.cluster.pipeline.spread.topology import in_terms
from engine.cluster.pipeline.status import PluginStatus

__all__ = ["SPREAD", "SpreadFilter", "SpreadPrioritizer"]

SPREAD = "Spread"


class SpreadFilter:
    """Validates the spread terms (even with no candidate left), then keeps the clusters in every hard term."""

    NAME: ClassVar[str] = SPREAD

    def filter(self, ctx: EvalContext, candidates: Ids) -> FilterResult:
        """Misconfigured on the first invalid term; otherwise filters by the topology keys."""
        policy = ctx.compiled.spread
        if policy.error is not None:
            return FilterResult(candidates, PluginStatus.misconfigured(SPREAD, policy.error))
        depth = policy.hard_depth
        if depth < 0 or not len(candidates):
            return FilterResult(candidates)
        return FilterResult(candidates[in_terms(ctx.view, policy.terms[: depth + 1], candidates)])


class SpreadPrioritizer:
    """`Spread`: its scores are filled in by the selection loop; alone it gives every candidate 0."""

    NAME: ClassVar[str] = SPREAD

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """0 for every candidate: the selection loop adds the spread scores step by step."""
        return ScoreResult(np.zeros(len(candidates), dtype=np.int64))

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """Without terms every spread score is 0; with terms the caller already re-decides on any candidate
        change (a departure changes the topologies)."""
        return False
