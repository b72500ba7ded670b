"""Shared arithmetic of the ResourceAllocatable prioritizers (spec F4, F5)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from engine.cluster.framework import EvalContext, ScoreResult, ValueRange
from engine.cluster.views import InventoryView

__all__ = ["resource_leaving_matters", "resource_scores"]


def resource_scores(ctx: EvalContext, candidates: list[str], resource: str) -> ScoreResult:
    """Min-max normalised allocatable over the candidates that report it; others get no score."""
    reported = ctx.view.allocatable_of(resource)
    names = list(filter(reported.__contains__, candidates))
    if not names:
        return ScoreResult({})
    values = list(map(reported.__getitem__, names))
    extent = ValueRange.of(values)
    low, high = extent.low, extent.high
    if high == low:
        return ScoreResult(dict.fromkeys(names, 100), range=extent)
    # a fleet has few distinct sizes: score each once
    by_value = {alloc: math.trunc(((alloc - low) / (high - low) - 0.5) * 2.0 * 100.0) for alloc in set(values)}
    return ScoreResult(dict(zip(names, map(by_value.__getitem__, values), strict=True)), range=extent)


def resource_leaving_matters(
    view: InventoryView, cluster: str, resource: str, ranges: Mapping[str, ValueRange] | None, name: str
) -> bool:
    """A departing candidate moves the others' scores only if it was the last at the low or the high end of
    the range the prioritizer `name` last normalised over (unknown range: it may)."""
    value = view.allocatable_of(resource).get(cluster)
    if value is None:
        return False  # it had no score and was not part of the range
    extent = None if ranges is None else ranges.get(name)
    return extent is None or not extent.drop(value)
