"""Shared arithmetic of the ResourceAllocatable prioritizers (spec F4, F5)."""

from __future__ import annotations

import math

from engine.cluster.framework import EvalContext, ScoreResult

__all__ = ["resource_scores"]


def resource_scores(ctx: EvalContext, candidates: list[str], resource: str) -> ScoreResult:
    """Min-max normalised allocatable over the candidates that report it; others get no score."""
    reported = ctx.view.allocatable_of(resource)
    values = {name: reported[name] for name in candidates if name in reported}
    if not values:
        return ScoreResult({})
    low, high = min(values.values()), max(values.values())
    if high == low:
        return ScoreResult(dict.fromkeys(values, 100))
    return ScoreResult(
        {name: math.trunc(((alloc - low) / (high - low) - 0.5) * 2.0 * 100.0) for name, alloc in values.items()}
    )
