"""Explain data (spec K4, decided item 1): why each cluster was removed, scored and chosen.

The shape follows upstream's scheduling debug endpoint: filter pipeline results, prioritizer results, and
every passing cluster's total (`passingScores`, which the decision event leaves out: K3), plus the resulting
decision and status for a CLI to print as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from engine.cluster.explain.predicate import predicate_details
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.compiled import compile_placement
from engine.cluster.pipeline.evaluate import Evaluation, evaluate
from engine.cluster.pipeline.framework import EvalContext, MappingCounts
from engine.cluster.pipeline.plugins.predicate import PredicateFilter
from engine.cluster.pipeline.plugins.spread import SPREAD
from engine.cluster.pipeline.registry import FILTERS
from engine.cluster.pipeline.spread.terms import has_terms
from engine.cluster.tracking.state import PlacementState
from engine.core import CEL_PLACEMENT_BUDGET, EngineContext
from topics.codec import dump_model

__all__ = ["explain_evaluation", "explain_placement"]


def explain_evaluation(
    key: str,
    state: PlacementState,
    evaluation: Evaluation,
    now: datetime,
    view: InventoryView | None = None,
    *,
    cel_budget: int = CEL_PLACEMENT_BUDGET,
) -> dict[str, Any]:
    """The explain document of one finished evaluation; with the evaluation's `view`, also why the Predicate filter
    removed each cluster it removed (`predicateDetails`)."""
    remaining = list(evaluation.available)
    filtered_by = evaluation.filtered_by
    pipeline: list[dict[str, Any]] = []
    names: list[str] = []
    spread = has_terms(state.placement.spec.spread_policy)
    for step in FILTERS:
        if step.NAME == SPREAD and not spread:  # without terms the spread filter is not a step of the pipeline
            continue
        names.append(step.NAME)
        remaining = [c for c in remaining if filtered_by.get(c) != step.NAME]
        pipeline.append({"name": ",".join(names), "filteredClusters": remaining})
    return {
        "placement": key,
        "generation": state.placement.metadata.generation,
        "evaluationTime": now.isoformat(),
        "eligibleClusterSets": list(evaluation.eligible_sets),
        "availableClusters": list(evaluation.available),
        "filteredPipelineResults": pipeline,
        "filteredBy": dict(sorted(filtered_by.items())),
        "prioritizeResults": [
            {"name": p.name, "weight": p.weight, "scores": dict(p.scores)} for p in evaluation.prioritizers
        ],
        # best first, where a reader looks for the cut
        "passingScores": {name: evaluation.passing_scores[name] for name in evaluation.ranked()},
        "selected": list(evaluation.selected),
        "status": {
            "code": evaluation.status.code.value,
            "plugin": evaluation.status.plugin,
            "message": evaluation.status.message,
        },
        "conditions": [dump_model(c) for c in evaluation.conditions],
        **_predicate_details(state, filtered_by, view, cel_budget),
    }


def _predicate_details(
    state: PlacementState, filtered_by: Mapping[str, str], view: InventoryView | None, cel_budget: int
) -> dict[str, Any]:
    removed = [cluster for cluster, plugin in filtered_by.items() if plugin == PredicateFilter.NAME]
    if view is None or not removed:
        return {}
    return {"predicateDetails": predicate_details(compile_placement(state.placement), view, removed, cel_budget)}


def explain_placement(
    key: str, state: PlacementState, ctx: EngineContext, others: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Re-evaluate one placement purely and explain it.

    `others` are the Balance counts of the other placements' decisions; a running engine passes its own via
    `ClusterPlacementEngine.explain`, which should be preferred.
    """
    eval_ctx = EvalContext(
        placement=state.placement,
        view=InventoryView(ctx.inventory),
        now=ctx.now,
        current=state.current(),
        others=MappingCounts(dict(others or {})),
        compiled=compile_placement(state.placement),
        explain=True,
        cel_budget=ctx.settings.cel_placement_budget,
    )
    budget = ctx.settings.cel_placement_budget
    return explain_evaluation(key, state, evaluate(eval_ctx), ctx.now, eval_ctx.view, cel_budget=budget)
