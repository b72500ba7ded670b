"""ResourceAllocatableMemory prioritizer (spec F4): more allocatable memory scores higher."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.framework import EvalContext, ScoreResult
from engine.cluster.plugins.resource import resource_scores

__all__ = ["ResourceAllocatableMemoryPrioritizer"]


class ResourceAllocatableMemoryPrioritizer:
    """Scores `status.allocatable.memory` between -100 and 100."""

    NAME: ClassVar[str] = "ResourceAllocatableMemory"
    RELATIVE: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """F9 name."""
        return self.NAME

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Only clusters reporting both allocatable and capacity memory are scored."""
        return resource_scores(ctx, candidates, "memory")
