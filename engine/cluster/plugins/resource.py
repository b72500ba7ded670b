"""Shared arithmetic of the ResourceAllocatable prioritizers (spec F4, F5)."""

from __future__ import annotations

import math

from engine.cluster.framework import EvalContext, ScoreResult

__all__ = ["resource_scores"]


def resource_scores(ctx: EvalContext, candidates: list[str], resource: str) -> ScoreResult:
    """Min-max normalised allocatable over the candidates that report it; others get no score."""
    reported = ctx.view.allocatable_of(resource)
    names = list(filter(reported.__contains__, candidates))
    if not names:
        return ScoreResult({})
    values = list(map(reported.__getitem__, names))
    low, high = min(values), max(values)
    if high == low:
        return ScoreResult(dict.fromkeys(names, 100))
    # a fleet has few distinct sizes: score each once
    by_value = {alloc: math.trunc(((alloc - low) / (high - low) - 0.5) * 2.0 * 100.0) for alloc in set(values)}
    return ScoreResult(dict(zip(names, map(by_value.__getitem__, values), strict=True)))
