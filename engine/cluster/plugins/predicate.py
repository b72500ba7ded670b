"""Predicate filter (spec C6–C16): predicates are ORed; label AND claim AND CEL within one."""

from __future__ import annotations

from typing import ClassVar

from engine.cluster.cel_env import CelProgram
from engine.cluster.compiled import CompiledSelector
from engine.cluster.fleet import Ids
from engine.cluster.framework import EvalContext, FilterResult
from engine.cluster.selectors import EVERYTHING
from engine.cluster.status import PluginStatus
from engine.cluster.views import InventoryView

__all__ = ["PredicateFilter"]


def _matching(view: InventoryView, predicates: tuple[CompiledSelector, ...]) -> frozenset[str]:
    """Every cluster of the inventory that matches at least one predicate."""
    remaining = view.names()
    matched: set[str] = set()
    for selector in predicates:
        pool = remaining
        if selector.labels != EVERYTHING:
            pool = pool & view.selected("label", selector.labels)
        if selector.claims != EVERYTHING:
            pool = pool & view.selected("claim", selector.claims)
        if selector.cel and pool:
            program = CelProgram(selector.cel, view.cel_activation())
            text, pure, reads = selector.cel_key, selector.cel_pure, selector.cel_reads
            pool = frozenset(name for name in pool if view.cel_matches((text, name), pure, program, reads))
        matched |= pool
        remaining -= pool
        if not remaining:
            break
    return frozenset(matched)


class PredicateFilter:
    """Keeps the candidates that match at least one predicate."""

    NAME: ClassVar[str] = "Predicate"

    def filter(self, ctx: EvalContext, candidates: Ids) -> FilterResult:
        """An empty candidate list returns before any selector is looked at (C6)."""
        if not len(candidates):
            return FilterResult(candidates)
        compiled = ctx.compiled
        if compiled.predicate_error is not None:
            return FilterResult(candidates[:0], PluginStatus.misconfigured(self.NAME, compiled.predicate_error))
        if not ctx.placement.spec.predicates:
            return FilterResult(candidates)
        # thousands of placements share a handful of predicate lists: match each once per inventory version,
        # over the whole inventory, and keep the candidates in the set
        view = ctx.view
        matched = view.memo(
            (self.NAME, compiled.predicate_key), lambda: view.fleet().mask(_matching(view, compiled.predicates))
        )
        return FilterResult(candidates[matched[candidates]])
