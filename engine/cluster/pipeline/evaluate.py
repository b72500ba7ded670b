"""One evaluation of one placement, in upstream's order (spec B1–B6).

bindings -> eligible sets -> available clusters -> filters -> weights -> prioritizers -> sort -> select ->
decision groups -> pages -> conditions. The result is a plain value; publishing is the engine's business.
A placement whose spread can matter (terms with a Spread weight, or a `DoNotSchedule` term) replaces
sort -> select with the spread selection loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Fleet, Ids
from engine.cluster.pipeline.conditions import misconfigured_condition, satisfied_condition
from engine.cluster.pipeline.framework import EvalContext, ValueRange
from engine.cluster.pipeline.groups import Group, Page, build_groups, paginate
from engine.cluster.pipeline.plugins.spread import SPREAD
from engine.cluster.pipeline.registry import FILTERS
from engine.cluster.pipeline.spread.selection import select
from engine.cluster.pipeline.spread.topology import build_topologies
from engine.cluster.pipeline.status import SUCCESS, Code, PluginStatus
from engine.cluster.pipeline.weights import Plan, plan_prioritizers, spread_weight
from topics.k8s import Condition

__all__ = ["Evaluation", "PrioritizerScores", "evaluate"]


_NO_IDS: Ids = np.zeros(0, dtype=np.intp)
_NO_TOTALS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
_NO_IDS.flags.writeable = _NO_TOTALS.flags.writeable = False  # shared by every evaluation until it has results


@dataclass(frozen=True, slots=True)
class PrioritizerScores:
    """Explain data of one enabled prioritizer: raw scores, before weighting."""

    name: str
    weight: int
    scores: dict[str, int]
    """Only when explain was requested: the scores of the candidates it scored, by name."""
    range: ValueRange | None = None
    """The input range the scores were normalised over (ScoreResult.range)."""


@dataclass(slots=True)
class Evaluation:
    """Everything one evaluation produced."""

    has_bindings: bool = False
    eligible_sets: tuple[str, ...] = ()
    available: tuple[str, ...] = ()
    fleet: Fleet | None = None
    """The cluster ids the evaluation ran over."""
    removals: list[tuple[str, Ids, Ids]] = field(default_factory=list)
    """(filter, its candidates, those that passed) of every filter that removed any, as fleet ids."""
    prioritizers: list[PrioritizerScores] = field(default_factory=list)
    explained: bool = False
    """Evaluated with explain data (K4): every prioritizer's raw scores and every passing cluster's total."""
    passed_ids: Ids = field(default_factory=lambda: _NO_IDS)
    """The clusters that passed both filters, as fleet ids (empty when the evaluation failed)."""
    totals: NDArray[np.int64] = field(default_factory=lambda: _NO_TOTALS)
    """Their weighted totals, aligned with `passed_ids`. Without explain, a spread placement's unselected
    clusters lack their closing-pass spread score (S31): only the selected totals are published then."""
    _scores: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)
    _passing: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)
    selected: list[str] = field(default_factory=list)
    """Selected clusters: in rank order (score desc, name asc) when numberOfClusters is set, else by name."""
    selected_ids: Ids = field(default_factory=lambda: _NO_IDS)
    """The selected clusters as fleet ids, ascending (name order)."""
    selected_totals: NDArray[np.int64] = field(default_factory=lambda: _NO_TOTALS)
    """Their weighted totals, aligned with `selected_ids`."""
    selected_by_name: list[str] = field(default_factory=list)
    """The selected clusters' names in name order (the order of `selected_ids`)."""
    unscheduled: int = 0
    blocked: str = ""
    """Why the spread loop stopped short of numberOfClusters, when a skew limit stopped it (else empty)."""
    status: PluginStatus = SUCCESS
    groups: list[Group] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    due: datetime | None = None
    """The earliest future instant at which the answer may change by itself (spec L6)."""
    conditions: list[Condition] = field(default_factory=list)
    """[PlacementMisconfigured, PlacementSatisfied] without lastTransitionTime."""

    @property
    def scores(self) -> dict[str, int]:
        """Weighted totals of the selected clusters, by name (spec K3): a decision grows with what was decided,
        not with the fleet. Built when first read, since only a published or explained evaluation needs them."""
        if self._scores is None:
            self._scores = dict(zip(self.selected_by_name, self.selected_totals.tolist(), strict=True))
        return self._scores

    @property
    def passing_scores(self) -> dict[str, int]:
        """Weighted totals of every cluster that passed both filters, by name (explain data, K4); ValueError for
        an evaluation without explain, whose unselected totals are not all complete (see `totals`)."""
        if not self.explained:
            raise ValueError("passing scores are explain data: evaluate with explain")
        if self._passing is None:
            names = [] if self.fleet is None else self.fleet.names_of(self.passed_ids)
            self._passing = dict(zip(names, self.totals.tolist(), strict=True))
        return self._passing

    @property
    def warning(self) -> PluginStatus | None:
        """The final status when it is a Warning (spec K3)."""
        return self.status if self.status.code is Code.WARNING else None

    @property
    def filtered_by(self) -> dict[str, str]:
        """The filter that removed each removed cluster, by name (explain data, K4); derived only on demand."""
        out: dict[str, str] = {}
        for name, before, passed in self.removals:
            assert self.fleet is not None
            out.update(dict.fromkeys(self.fleet.names_of(np.setdiff1d(before, passed, assume_unique=True)), name))
        return out

    def ranked(self) -> list[str]:
        """Every cluster that passed the filters, by (score desc, name asc); explain only, as `passing_scores`."""
        passing = self.passing_scores
        return sorted(passing, key=lambda name: (-passing[name], name))


def _schedule(ctx: EvalContext, result: Evaluation, due: list[datetime]) -> None:
    """Filters, prioritizers and selection; sets `selected`, `scores`, `unscheduled` and `status`.

    Candidates are fleet ids in name order throughout; names are looked up once, for the results.
    """
    result.fleet = ctx.fleet
    filtered = _filter(ctx, result, due)
    if filtered is None:
        return
    candidates, final = filtered
    scored = _score(ctx, result, candidates, due, final)
    if scored is None:
        return
    totals, plan, final = scored
    _select(ctx, result, candidates, totals, plan=plan, final=final)


def _filter(ctx: EvalContext, result: Evaluation, due: list[datetime]) -> tuple[Ids, PluginStatus] | None:
    """The candidates every filter passes and the status so far (a warning of the last filter that gave one);
    None, with `result.status` set, when a filter fails."""
    candidates = ctx.view.available_ids(result.eligible_sets)
    final = SUCCESS
    for step in FILTERS:
        outcome = step.filter(ctx, candidates)
        if outcome.status.failed:
            result.status = outcome.status
            return None
        if outcome.status.code is Code.WARNING:  # a CEL expression stopped at its cost limit
            final = outcome.status
        if len(outcome.passed) != len(candidates):
            result.removals.append((step.NAME, candidates, outcome.passed))
        candidates = outcome.passed
        due.extend(outcome.due)
    return candidates, final


def _score(
    ctx: EvalContext, result: Evaluation, candidates: Ids, due: list[datetime], final: PluginStatus
) -> tuple[NDArray[np.int64], Plan, PluginStatus] | None:
    """The candidates' weighted total scores, the plan that gave them and the status so far; None, with
    `result.status` set, when the policy or a prioritizer fails."""
    plan = plan_prioritizers(ctx.placement.spec.prioritizer_policy, ctx.compiled.spread.declared)
    planned, status = plan
    if status.failed:
        result.status = status
        return None
    totals = np.zeros(len(candidates), dtype=np.int64)
    for entry in planned:
        prioritizer = entry.prioritizer
        scored = prioritizer.score(ctx, candidates)
        if scored.status.failed:
            result.status = scored.status
            return None
        if scored.status.code is Code.WARNING:
            final = scored.status
        due.extend(scored.due)
        totals += scored.scores if entry.weight == 1 else scored.scores * entry.weight
        explained: dict[str, int] = {}
        if ctx.explain:
            kept = candidates if scored.scored is None else candidates[scored.scored]
            values = scored.scores if scored.scored is None else scored.scores[scored.scored]
            explained = dict(zip(ctx.fleet.names_of(kept), values.tolist(), strict=True))
        result.prioritizers.append(PrioritizerScores(prioritizer.name, entry.weight, explained, scored.range))
    return totals, plan, final


def _select(
    ctx: EvalContext,
    result: Evaluation,
    candidates: Ids,
    totals: NDArray[np.int64],
    *,
    plan: Plan,
    final: PluginStatus,
) -> None:
    """The selection from the scored candidates: by spread, all of them, or the best `numberOfClusters`."""
    fleet = ctx.fleet
    wanted = ctx.placement.spec.number_of_clusters
    if wanted is not None and wanted < 0:
        result.status = PluginStatus.misconfigured("", f"numberOfClusters cannot be negative: {wanted}")
        result.prioritizers.clear()
        return
    weight = spread_weight(plan)
    if ctx.compiled.spread.read(weight):
        _select_spread(ctx, result, candidates, totals, weight)
        result.status = final
        return
    result.passed_ids, result.totals = candidates, totals
    if wanted is None:  # everything is selected: rank order is not needed, keep name order
        result.selected, result.selected_ids, result.selected_totals = fleet.names_of(candidates), candidates, totals
    else:  # a stable sort keeps ties in name order (G1)
        picked = np.argsort(-totals, kind="stable")[:wanted]
        result.selected = fleet.names_of(candidates[picked])
        _keep_selected(result, candidates, totals, picked)
    result.unscheduled = 0 if wanted is None else wanted - len(result.selected)
    result.status = final


def _select_spread(ctx: EvalContext, result: Evaluation, candidates: Ids, base: NDArray[np.int64], weight: int) -> None:
    """The spread loop instead of sort -> select: totals gain the weighted spread scores; `selected` is in
    selection order when numberOfClusters is set (it is not shown: groups are by name), else in name order."""
    fleet, terms = ctx.fleet, ctx.compiled.spread.terms
    wanted = ctx.placement.spec.number_of_clusters
    # the closing pass scores the unselected candidates, which only explain shows (K3, K4)
    chosen = select(terms, build_topologies(ctx.view, terms, candidates), base, weight, wanted, close=ctx.explain)
    result.passed_ids, result.totals = candidates, base + weight * chosen.spread
    picked = candidates[chosen.picked]
    _keep_selected(result, candidates, result.totals, np.asarray(chosen.picked, dtype=np.intp))
    result.selected = fleet.names_of(picked if wanted is not None else result.selected_ids)
    result.unscheduled = 0 if wanted is None else wanted - len(picked)
    if chosen.blocked is not None and result.unscheduled:
        term = terms[chosen.blocked]
        result.blocked = f"maxSkew of spreadConstraints[{chosen.blocked}] ({term.key}) cannot be satisfied"
    if ctx.explain and weight:
        at = next(i for i, p in enumerate(result.prioritizers) if p.name == SPREAD)
        scores = dict(zip(fleet.names_of(candidates), chosen.spread.tolist(), strict=True))
        result.prioritizers[at] = PrioritizerScores(SPREAD, weight, scores)


def _keep_selected(result: Evaluation, candidates: Ids, totals: NDArray[np.int64], picked: NDArray[np.intp]) -> None:
    """The selected clusters (`picked`: positions in `candidates`) as ascending ids and their totals."""
    at = np.sort(picked)
    result.selected_ids, result.selected_totals = candidates[at], totals[at]


def evaluate(ctx: EvalContext) -> Evaluation:
    """Run the whole pipeline; raises views.EvaluationError when it cannot run at all (spec C3)."""
    placement, view = ctx.placement, ctx.view
    spec = placement.spec
    result = Evaluation(explained=ctx.explain)
    bound = view.bound_sets(placement.metadata.namespace)
    result.has_bindings = bool(bound)
    wanted_sets = set(spec.cluster_sets)
    result.eligible_sets = tuple(name for name in bound if not wanted_sets or name in wanted_sets)
    result.available = view.available(result.eligible_sets)

    due: list[datetime] = []
    _schedule(ctx, result, due)
    if result.status.failed:
        result.selected, result.selected_ids, result.unscheduled, result.blocked = [], result.selected_ids[:0], 0, ""
        result.passed_ids, result.totals = result.passed_ids[:0], result.totals[:0]
        result.selected_totals = result.selected_totals[:0]
    # rank order only when numberOfClusters cut it; ascending ids are name order
    in_name_order = result.selected if spec.number_of_clusters is None else ctx.fleet.names_of(result.selected_ids)
    result.selected_by_name = in_name_order

    groups, group_status = build_groups(spec.decision_strategy.group_strategy, ctx.compiled, in_name_order, view)
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
            cause=result.blocked,
        ),
    ]
    return result
