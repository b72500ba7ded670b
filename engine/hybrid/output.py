"""Event payloads built from a rule's state (hybrid spec C2, H6, J)."""

from __future__ import annotations

from typing import Any

from engine.hybrid.identity import refs_out
from engine.hybrid.state import Reduction, RuleState
from topics.placementrule import (
    AdvisorRequest,
    CandidateRating,
    CandidatesProposed,
    PlacementRuleDecided,
    PlacementRuleStatus,
    ReductionSummary,
    RuleRef,
)
from topics.placementrule import Reduction as ReductionOut

__all__ = ["candidates_proposed", "decided", "deleted", "reduction_out", "status_of"]


def reduction_out(reduction: Reduction) -> ReductionOut:
    """H6 record on the wire; ratings carry both the readable value and the exact hundredths."""
    return ReductionOut(
        round=reduction.round,
        reason=reduction.reason,
        removed=refs_out(reduction.removed),
        ratings=[
            CandidateRating(candidate=r.ref.out(), rating=r.hundredths / 100, hundredths=r.hundredths)
            for r in reduction.ratings
        ],
        forced=reduction.forced,
    )


def status_of(state: RuleState) -> PlacementRuleStatus:
    """The status snapshot (A4, H6): the reduction history as rounds and names, the latest step in full."""
    return PlacementRuleStatus(
        observed_generation=state.observed_generation,
        last_update_time=state.last_update_time,
        round=state.round,
        candidates=refs_out(state.candidates),
        eliminators=refs_out(state.eliminators),
        recommendations={name: list(entries) for name, entries in state.recommendations.items()},
        decisions=refs_out(state.decisions),
        reductions=[ReductionSummary(round=r.round, removed=list(r.removed)) for r in state.reductions],
        last_reduction=None if state.last_reduction is None else reduction_out(state.last_reduction),
    )


def candidates_proposed(state: RuleState) -> CandidatesProposed:
    """C2 candidates publication for the state's current round."""
    advisors = state.spec.advisor_list
    rules: dict[str, Any] = {}
    for advisor in advisors:
        if advisor.rules is not None:
            rules.setdefault(advisor.name, advisor.rules)
    return CandidatesProposed(
        rule=RuleRef(namespace=state.namespace, name=state.name),
        round=state.round,
        advisors=state.spec.advisor_names,
        candidates=refs_out(state.candidates),
        advisor_rules=rules,
        advisor_specs=[
            AdvisorRequest(name=a.name, type=a.effective_type, weight=a.effective_weight, rules=a.rules)
            for a in advisors
        ],
        status=status_of(state),
    )


def decided(state: RuleState) -> PlacementRuleDecided:
    """C2 decision-changed event with the status snapshot."""
    status = status_of(state)
    return PlacementRuleDecided(
        namespace=state.namespace,
        name=state.name,
        generation=state.generation,
        decisions=status.decisions,
        candidates=status.candidates,
        eliminators=status.eliminators,
        round=state.round,
        observed_generation=state.observed_generation,
        last_update_time=state.last_update_time,
        recommendations=status.recommendations,
        reductions=status.reductions,
        last_reduction=status.last_reduction,
    )


def deleted(namespace: str, name: str, generation: int) -> PlacementRuleDecided:
    """D6: the last event of a deleted rule."""
    return PlacementRuleDecided(namespace=namespace, name=name, generation=generation, deleted=True)
