"""One evaluation of one placement, in upstream's order (spec B1–B6).

bindings -> eligible sets -> available clusters -> filters -> weights -> prioritizers -> sort -> select ->
decision groups -> pages -> conditions. The result is a plain value; publishing is the engine's business.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime
from itertools import filterfalse, repeat
from operator import add, mul

from engine.cluster.conditions import misconfigured_condition, satisfied_condition
from engine.cluster.framework import EvalContext, ValueRange, adds_weighted
from engine.cluster.groups import Group, Page, build_groups, paginate
from engine.cluster.registry import FILTERS
from engine.cluster.status import SUCCESS, Code, PluginStatus
from engine.cluster.weights import plan_prioritizers
from topics.k8s import Condition

__all__ = ["Evaluation", "PrioritizerScores", "evaluate"]


@dataclass(frozen=True, slots=True)
class PrioritizerScores:
    """Explain data of one enabled prioritizer: raw scores, before weighting."""

    name: str
    weight: int
    scores: dict[str, int]
    """Empty for a prioritizer that adds straight into the totals, unless explain was requested."""
    range: ValueRange | None = None
    """The input range the scores were normalised over (ScoreResult.range)."""


@dataclass(slots=True)
class Evaluation:
    """Everything one evaluation produced."""

    has_bindings: bool = False
    eligible_sets: tuple[str, ...] = ()
    available: tuple[str, ...] = ()
    removals: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(filter, its candidates, those that passed) of every filter that removed any."""
    prioritizers: list[PrioritizerScores] = field(default_factory=list)
    scores: dict[str, int] = field(default_factory=dict)
    """Weighted totals of the clusters that passed both filters (spec K3)."""
    selected: list[str] = field(default_factory=list)
    """Selected clusters: in rank order (score desc, name asc) when numberOfClusters is set, else by name."""
    unscheduled: int = 0
    status: PluginStatus = SUCCESS
    groups: list[Group] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    due: datetime | None = None
    """The earliest future instant at which the answer may change by itself (spec L6)."""
    conditions: list[Condition] = field(default_factory=list)
    """[PlacementMisconfigured, PlacementSatisfied] without lastTransitionTime."""

    @property
    def warning(self) -> PluginStatus | None:
        """The final status when it is a Warning (spec K3)."""
        return self.status if self.status.code is Code.WARNING else None

    @property
    def filtered_by(self) -> dict[str, str]:
        """The filter that removed each removed cluster, by name (explain data, K4); derived only on demand."""
        out: dict[str, str] = {}
        for name, before, passed in self.removals:
            out.update(dict.fromkeys(filterfalse(set(passed).__contains__, before), name))
        return out

    def ranked(self) -> list[str]:
        """Every cluster that passed the filters, by (score desc, name asc)."""
        return sorted(self.scores, key=lambda name: (-self.scores[name], name))


def _add_weighted(totals: dict[str, int], scores: dict[str, int], weight: int) -> dict[str, int]:
    """totals + weight × scores (E7), a fresh map when every candidate is scored; C-level maps, no loop."""
    if len(scores) != len(totals):  # the unscored candidates add nothing
        for name, value in scores.items():
            if value:
                totals[name] += weight * value
        return totals
    weighted = scores if weight == 1 else dict(zip(scores, map(mul, scores.values(), repeat(weight)), strict=True))
    return dict(zip(totals, map(add, totals.values(), map(weighted.__getitem__, totals)), strict=True))


def _schedule(ctx: EvalContext, result: Evaluation, due: list[datetime]) -> None:
    """Filters, prioritizers and selection; sets `selected`, `scores`, `unscheduled` and `status`."""
    candidates = list(result.available)
    for step in FILTERS:
        outcome = step.filter(ctx, candidates)
        if outcome.status.failed:
            result.status = outcome.status
            return
        if len(outcome.passed) != len(candidates):
            result.removals.append((step.NAME, candidates, outcome.passed))
        candidates = outcome.passed
        due.extend(outcome.due)

    planned, status = plan_prioritizers(ctx.placement.spec.prioritizer_policy)
    if status.failed:
        result.status = status
        return
    totals = dict.fromkeys(candidates, 0)
    final = SUCCESS
    for entry in planned:
        prioritizer = entry.prioritizer
        if not ctx.explain and adds_weighted(prioritizer):
            totals = prioritizer.add_weighted(ctx, totals, entry.weight)
            result.prioritizers.append(PrioritizerScores(entry.prioritizer.name, entry.weight, {}))
            continue
        scored = prioritizer.score(ctx, candidates)
        if scored.status.failed:
            result.status = scored.status
            return
        if scored.status.code is Code.WARNING:
            final = scored.status
        due.extend(scored.due)
        totals = _add_weighted(totals, scored.scores, entry.weight)
        result.prioritizers.append(PrioritizerScores(prioritizer.name, entry.weight, scored.scores, scored.range))

    wanted = ctx.placement.spec.number_of_clusters
    if wanted is not None and wanted < 0:
        result.status = PluginStatus.misconfigured("", f"numberOfClusters cannot be negative: {wanted}")
        result.prioritizers.clear()
        return
    result.scores = totals
    # candidates are in name order, and both sorts below are stable: ties stay in name order (G1)
    if wanted is None:
        result.selected = candidates  # everything is selected: rank order is not needed, keep name order
    elif wanted >= len(candidates):
        result.selected = sorted(candidates, key=totals.__getitem__, reverse=True)
    else:
        result.selected = heapq.nlargest(wanted, candidates, key=totals.__getitem__)
    result.unscheduled = 0 if wanted is None else wanted - len(result.selected)
    result.status = final


def evaluate(ctx: EvalContext) -> Evaluation:
    """Run the whole pipeline; raises views.EvaluationError when it cannot run at all (spec C3)."""
    placement, view = ctx.placement, ctx.view
    spec = placement.spec
    result = Evaluation()
    bound = view.bound_sets(placement.metadata.namespace)
    result.has_bindings = bool(bound)
    wanted_sets = set(spec.cluster_sets)
    result.eligible_sets = tuple(name for name in bound if not wanted_sets or name in wanted_sets)
    result.available = view.available(result.eligible_sets)

    due: list[datetime] = []
    _schedule(ctx, result, due)
    if result.status.failed:
        result.selected, result.unscheduled, result.scores = [], 0, {}

    groups, group_status = build_groups(
        spec.decision_strategy.group_strategy, ctx.compiled, sorted(result.selected), view
    )
    if group_status.failed:
        result.status = group_status
    result.groups = groups
    result.pages = paginate(placement.metadata.name, groups)
    future = [instant for instant in due if instant > ctx.now]
    result.due = min(future) if future else None
    result.conditions = [
        misconfigured_condition(result.status),
        satisfied_condition(
            has_bindings=result.has_bindings,
            cluster_sets=spec.cluster_sets,
            eligible_sets=result.eligible_sets,
            available=len(result.available),
            status=result.status,
            selected=len(result.selected),
            unscheduled=result.unscheduled,
        ),
    ]
    return result
