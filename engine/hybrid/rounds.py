"""The round lifecycle of one rule (hybrid spec D, E, F, H5, I) as pure state transitions.

Every transition returns the new state and the rounds it opened, oldest first; the engine turns each opened round
into a candidates publication. Evaluation is idempotent: settling a settled state changes nothing, so the engine
may settle after every input without tracking why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from engine.hybrid.candidates import Pool
from engine.hybrid.evaluation import collect_answers, evaluate, short_circuit
from engine.hybrid.reduction import reduce
from engine.hybrid.rundown import run_down
from engine.hybrid.state import RuleState
from topics.placementrule import RecommendationPosted

__all__ = ["Progress", "expire", "open_round", "post", "refresh", "settle"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Progress:
    """A transition's result: the new state and a snapshot of every round opened on the way."""

    state: RuleState
    opened: tuple[RuleState, ...] = ()


def open_round(state: RuleState, now: datetime, timeout: timedelta, rounds: int = 1) -> RuleState:
    """Start the next round, or `rounds` rounds on (D2, H5): no answers yet, a fresh `lastUpdateTime` and
    deadline (F2)."""
    return replace(
        state,
        round=state.round + rounds,
        recommendations={},
        last_update_time=now,
        deadline=now + timeout if state.asks_advisors else None,
        timed_out=False,
    )


def refresh(state: RuleState, pool: Pool, now: datetime, timeout: timedelta) -> Progress:
    """D1–D4: compare the fresh candidates with the rule's, reset when they or the generation differ, evaluate.

    The round a reset opens is published only to a rule's advisors: without any, nobody is asked (H6)."""
    state = replace(state, pool_kind=pool.kind)
    fresh_keys = frozenset(r.ident for r in pool.candidates)
    if state.generation == state.observed_generation and fresh_keys == state.key_set:
        return settle(state, now, timeout)
    state = replace(
        state,
        candidates=pool.candidates,
        eliminators=(),
        reductions=(),
        last_reduction=None,
        observed_generation=state.generation,
    )
    state = open_round(state, now, timeout)
    settled = settle(state, now, timeout)
    return Progress(settled.state, (state, *settled.opened) if state.asks_advisors else settled.opened)


def post(state: RuleState, posted: RecommendationPosted) -> RuleState | None:
    """E1–E3: store an advisor's answer for the current round; None when the post is dropped."""
    if posted.round != state.round:
        _LOG.debug(
            "dropping %s's answer for round %d of %s/%s: the rule is in round %d",
            posted.advisor,
            posted.round,
            state.namespace,
            state.name,
            state.round,
        )
        return None
    if posted.advisor not in state.spec.advisor_names:
        _LOG.debug("ignoring advisor %r: %s/%s does not list it", posted.advisor, state.namespace, state.name)
        return None
    recommendations = dict(state.recommendations)
    recommendations[posted.advisor] = tuple(posted.recommendations)
    return replace(state, recommendations=recommendations)


def settle(state: RuleState, now: datetime, timeout: timedelta) -> Progress:
    """F3/F4, G and H until the rule decides or waits for advisors.

    With every advisor's answer in, one reduction opens a new round for them (H5). Otherwise the answers cannot
    change before G decides: a rule without advisors runs its rounds back to back, unpublished, and a round past
    its deadline is finalised with the answers it holds, its missing advisors abstaining (I2). Both are
    reduced to the decision in one evaluation (`run_down`).
    """
    spec = state.spec
    if short_circuit(state.candidates, spec.replicas):
        return Progress(replace(state, decisions=(), deadline=None))
    ready = state.ready
    if not ready and not state.timed_out:
        return Progress(state)
    answers = collect_answers(spec.advisor_list, state.recommendations, state.candidates)
    verdict = evaluate(state.candidates, spec.replicas, answers)
    if verdict.decisions is not None:
        return Progress(replace(state, decisions=verdict.decisions, deadline=None))
    weight = spec.effective_decision_weight
    if ready and state.asks_advisors:
        survivors, step = reduce(
            state.candidates, verdict.passed, answers, state.decisions, weight, round_number=state.round
        )
        opened = open_round(state.reduced((step,), survivors), now, timeout)
        return Progress(opened, (opened,))
    outcome = run_down(
        state.candidates,
        verdict.passed,
        answers,
        state.decisions,
        decision_weight=weight,
        replicas=spec.replicas,
        round_number=state.round,
        advance=ready,
        forced=not ready,
    )
    state = replace(state.reduced(outcome.steps, outcome.survivors), decisions=outcome.decisions, deadline=None)
    if ready:  # every step was a round of its own (H5), and the rule now waits in the last of them
        state = open_round(state, now, timeout, len(outcome.steps))
    return Progress(state)


def expire(state: RuleState, now: datetime, timeout: timedelta) -> Progress:
    """F2/I: at the deadline, close the round for the advisors that have not answered and finalise."""
    if state.deadline is None or now < state.deadline:
        return Progress(state)
    return settle(replace(state, deadline=None, timed_out=True), now, timeout)
