"""ResourceAllocatableMemory prioritizer (spec F4): more allocatable memory scores higher."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar

from engine.cluster.framework import EvalContext, ScoreResult, ValueRange
from engine.cluster.plugins.resource import resource_leaving_matters, resource_scores
from engine.cluster.views import InventoryView

__all__ = ["ResourceAllocatableMemoryPrioritizer"]


class ResourceAllocatableMemoryPrioritizer:
    """Scores `status.allocatable.memory` between -100 and 100."""

    NAME: ClassVar[str] = "ResourceAllocatableMemory"

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Only clusters reporting both allocatable and capacity memory are scored."""
        return resource_scores(ctx, candidates, "memory")

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """Scores are normalised over the candidates: only a departure from either end of the range moves them."""
        return resource_leaving_matters(view, cluster, "memory", ranges, self.NAME)
