"""ResourceAllocatable prioritizers (F4, F5): more allocatable of one resource scores higher. One class serves
every resource; the registry builds one instance per built-in name (CPU, memory)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar

import numpy as np

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.framework import EvalContext, ScoreResult, ValueRange

__all__ = ["ResourceAllocatablePrioritizer"]


class ResourceAllocatablePrioritizer:
    """Scores allocatable `resource` between -100 and 100, min-max normalised over the candidates that report
    it; the others get no score."""

    NAME: ClassVar[str] = "ResourceAllocatable"

    def __init__(self, name: str, resource: str) -> None:
        self._name = name
        self.resource = resource
        """The key in `status.allocatable` and `status.capacity`, e.g. `cpu`."""

    @property
    def name(self) -> str:
        """F9 name, e.g. `ResourceAllocatableCPU`."""
        return self._name

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """Only clusters reporting both allocatable and capacity of the resource are scored."""
        values = ctx.view.allocatable_values(self.resource)[candidates]
        scored = ~np.isnan(values)
        reported = values[scored]
        scores = np.zeros(len(candidates), dtype=np.int64)
        if not len(reported):
            return ScoreResult(scores, scored)
        extent = ValueRange.of(reported)
        low, high = extent.low, extent.high
        if high == low:
            scores[scored] = 100
        else:  # the formula's double operations, in its order (F4)
            scores[scored] = np.trunc(((reported - low) / (high - low) - 0.5) * 2.0 * 100.0)
        return ScoreResult(scores, scored, range=extent)

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """A departing candidate moves the others' scores only if it was the last at the low or the high end
        of the range this prioritizer last normalised over (unknown range: it may)."""
        value = view.allocatable_of(self.resource).get(cluster)
        if value is None:
            return False  # it had no score and was not part of the range
        extent = None if ranges is None else ranges.get(self._name)
        return extent is None or not extent.drop(value)
