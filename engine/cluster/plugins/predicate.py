"""Predicate filter (spec C6–C16): predicates are ORed; label AND claim AND CEL within one."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.framework import EvalContext, FilterResult
from engine.cluster.status import PluginStatus

__all__ = ["PredicateFilter"]


class PredicateFilter:
    """Keeps the candidates that match at least one predicate."""

    NAME: ClassVar[str] = "Predicate"

    def filter(self, ctx: EvalContext, candidates: list[str]) -> FilterResult:
        """An empty candidate list returns before any selector is looked at (C6)."""
        if not candidates:
            return FilterResult([])
        compiled = ctx.compiled
        if compiled.predicate_error is not None:
            return FilterResult([], PluginStatus.misconfigured(self.NAME, compiled.predicate_error))
        if not ctx.placement.spec.predicates:
            return FilterResult(list(candidates))
        matched = ctx.view.predicate_matches(compiled)
        return FilterResult(list(filter(matched.__contains__, candidates)))
