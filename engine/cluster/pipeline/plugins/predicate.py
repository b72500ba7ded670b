"""Predicate filter (spec C6–C17): predicates are ORed; label AND claim AND CEL within one.

A CEL evaluation stopped at the cost limit is "no match" for that cluster, like any runtime error; the filter then
also reports a Warning naming the first stopped expression (in spec order) among the placement's candidates.

One evaluation of a placement spends at most its budget of cost units (C17): its candidates are charged in
predicate order, then name order, each at the cost its outcome had (a cached outcome is charged as if evaluated
again, so the answer never depends on what was cached); from the cluster that takes the total past the budget on,
no CEL expression of the placement is evaluated (no match), and the Warning says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.cel_env import CelProgram
from engine.cluster.matching.selectors import EVERYTHING, Selector
from engine.cluster.pipeline.compiled import CompiledSelector
from engine.cluster.pipeline.framework import EvalContext, FilterResult
from engine.cluster.pipeline.status import SUCCESS, Code, PluginStatus

__all__ = ["PredicateFilter", "StoppedCount", "stopped_count"]

_SHOWN = 200
"""Characters of a stopped expression quoted in the Warning."""
_NOT_STOPPED = -1


@dataclass(slots=True)
class StoppedCount:
    """CEL work stopped while matching against one view (outcomes taken from caches are not evaluations)."""

    count: int = 0
    """CEL evaluations of a cluster stopped at the cost limit (C15)."""
    budget: int = 0
    """Placement evaluations stopped by their budget (C17)."""


def stopped_count(view: InventoryView) -> StoppedCount:
    """The view's counts of stopped CEL work."""
    return view.memo(("Predicate", "stopped CEL evaluations"), StoppedCount)


class _Outcomes:
    """One selector's CEL outcomes on one view, by fleet id, filled as placements ask for them: every placement
    with the same expressions shares them, and each charges its own budget with their costs."""

    __slots__ = ("any_stopped", "cost", "known", "matched", "program", "selector", "stopped", "view")

    def __init__(self, view: InventoryView, selector: CompiledSelector) -> None:
        size = len(view.fleet())
        self.view, self.selector = view, selector
        self.known = np.zeros(size, dtype=np.bool_)
        self.matched = np.zeros(size, dtype=np.bool_)
        self.cost = np.zeros(size, dtype=np.int64)
        self.stopped = np.full(size, _NOT_STOPPED, dtype=np.int32)
        """The index of the expression stopped at the cost limit on each cluster, or _NOT_STOPPED."""
        self.program: CelProgram | None = None
        self.any_stopped = False
        """Whether some cluster's evaluation was stopped at the cost limit (else `stopped` needs no look)."""

    def settle(self, pool: Ids, allowance: int) -> tuple[int, int]:
        """How many of `pool`'s clusters, in order, fit in `allowance` cost units, and what they cost; evaluates
        those not known yet, and the first one past the allowance, then no more."""
        if not self.known[pool].all():
            self._fill(pool, allowance)
        costs = self.cost[pool]
        total = int(costs.sum())
        if total <= allowance:  # the usual case
            return len(pool), total
        totals = np.cumsum(costs)
        cut = int(np.searchsorted(totals, allowance, side="right"))
        return cut, int(totals[cut - 1]) if cut else 0

    def _fill(self, pool: Ids, allowance: int) -> None:
        view, selector = self.view, self.selector
        program = self.program
        if program is None:
            program = self.program = CelProgram(selector.cel, view.cel_activation())
        names = view.fleet().names
        known, cost = self.known, self.cost
        stopped_before = program.stopped
        total = 0
        for index in pool.tolist():
            if not known[index]:
                outcome = view.cel_outcome(
                    (selector.cel_key, names[index]), selector.cel_pure, program, selector.cel_reads
                )
                known[index] = True
                self.matched[index] = outcome.matched
                cost[index] = outcome.cost
                if outcome.stopped is not None:
                    self.stopped[index] = outcome.stopped
                    self.any_stopped = True
            total += int(cost[index])
            if total > allowance:
                break
        stopped_count(view).count += program.stopped - stopped_before


@dataclass(slots=True)
class _Match:
    """One placement's matching: what passed, and why CEL work was stopped (the first reason in spec order)."""

    passed: list[Ids]
    spent: int = 0
    limit_stop: str | None = None
    """The first expression stopped at the cost limit on a candidate (C15)."""
    budget_stop: str | None = None
    """The expression whose evaluation took the placement past its budget (C17)."""
    skipped: tuple[Ids, ...] = ()
    """Candidates whose CEL was not evaluated for want of budget."""


def _mask(view: InventoryView, source: str, selector: Selector) -> NDArray[np.bool_]:
    """The clusters a label or claim selector selects, over the fleet's ids (once per view)."""
    return view.memo(("Predicate", source, selector), lambda: view.fleet().mask(view.selected(source, selector)))


def _cel(view: InventoryView, selector: CompiledSelector, pool: Ids, budget: int, found: _Match) -> Ids:
    """The clusters of `pool` the selector's expressions match within what is left of the budget."""
    if found.budget_stop is not None:
        found.skipped = (*found.skipped, pool)
        return pool[:0]
    outcomes = view.memo(("Predicate", "CEL", selector.cel_key), lambda: _Outcomes(view, selector))
    cut, spent = outcomes.settle(pool, budget - found.spent)
    inside = pool if cut == len(pool) else pool[:cut]
    found.spent += spent
    if found.limit_stop is None and outcomes.any_stopped:
        stopped = outcomes.stopped[inside]
        stopped = stopped[stopped != _NOT_STOPPED]
        if len(stopped):
            found.limit_stop = selector.cel[int(stopped.min())].text
    if cut < len(pool):
        crossing = int(outcomes.stopped[pool[cut]])
        found.budget_stop = selector.cel[max(crossing, 0)].text
        found.skipped = (*found.skipped, pool[cut:])
    return inside[outcomes.matched[inside]]


def _matching(view: InventoryView, predicates: tuple[CompiledSelector, ...], candidates: Ids, budget: int) -> _Match:
    """The candidates that match at least one predicate, charged against the placement's CEL budget."""
    remaining = candidates
    found = _Match([])
    last = len(predicates) - 1
    for number, selector in enumerate(predicates):
        pool = remaining
        if selector.labels != EVERYTHING:
            pool = pool[_mask(view, "label", selector.labels)[pool]]
        if selector.claims != EVERYTHING:
            pool = pool[_mask(view, "claim", selector.claims)[pool]]
        if selector.cel and len(pool):
            pool = _cel(view, selector, pool, budget, found)
        found.passed.append(pool)
        if number == last:
            break
        taken = np.zeros(len(view.fleet()), dtype=np.bool_)
        taken[pool] = True
        remaining = remaining[~taken[remaining]]
        if not len(remaining):
            break
    return found


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _status(found: _Match, budget: int) -> PluginStatus:
    """The Warning of a stopped evaluation: the placement's budget (C17) before an expression's own limit (C15)."""
    name = PredicateFilter.NAME
    if found.budget_stop is not None:
        skipped = len(np.unique(np.concatenate(found.skipped)))
        message = (
            f'CEL expression "{_shown(found.budget_stop)}" stopped: placement budget of {budget} cost units '
            f"exceeded, {skipped} clusters not evaluated"
        )
        return PluginStatus(Code.WARNING, name, message)
    if found.limit_stop is not None:
        return PluginStatus(
            Code.WARNING, name, f'CEL expression "{_shown(found.limit_stop)}" stopped: cost limit exceeded'
        )
    return SUCCESS


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
        # thousands of placements share a handful of predicate lists: the selectors' answers and the CEL outcomes
        # are kept per inventory version (`_mask`, `_Outcomes`), and each placement reads its candidates' there
        found = _matching(ctx.view, compiled.predicates, candidates, ctx.cel_budget)
        if found.budget_stop is not None:
            stopped_count(ctx.view).budget += 1
        parts = found.passed
        passed = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))  # each part is in id order
        return FilterResult(passed, _status(found, ctx.cel_budget))
