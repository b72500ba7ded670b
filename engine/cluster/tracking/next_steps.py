"""When and what a placement publishes next: its published answer, the follow-up on its own changed decision
(L5) and the periodic resync (L8). Pure functions of an evaluation and the context."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from engine.cluster.pipeline.conditions import set_conditions
from engine.cluster.pipeline.evaluate import Evaluation
from engine.cluster.tracking.state import PlacementState, Published
from engine.core import EngineContext
from topics.interning import Interning

__all__ = ["follow_up_may_differ", "next_resync", "published_answer", "with_due"]

_TICK = timedelta(microseconds=1)
"""The shortest resync period: a shorter one would round to zero and never move the timer."""


def published_answer(
    state: PlacementState,
    evaluation: Evaluation,
    warning: tuple[str, str] | None,
    now: datetime,
    interning: Interning,
) -> Published:
    """The answer an evaluation publishes, its parts shared through the runtime's pools; a condition that did not
    change keeps its transition time."""
    previous = state.published.conditions if state.published is not None else ()
    return Published(
        pages=tuple(evaluation.pages),
        selected=len(evaluation.selected),
        conditions=tuple(set_conditions(previous, evaluation.conditions, now, interning)),
        warning=warning,
        generation=state.placement.metadata.generation,
        evaluation_time=now,
        interning=interning,
    )


def with_due(state: PlacementState, due: datetime | None) -> PlacementState:
    """The state with its timer at `due`: the same object when nothing changes, so nothing is rewritten."""
    return state if state.due == due else PlacementState(state.placement, state.published, due)


def follow_up_may_differ(
    evaluation: Evaluation,
    before: frozenset[str],
    after: frozenset[str],
    no_select_if_new: Callable[[], frozenset[str]],
) -> bool:
    """Whether re-evaluating with the new decision as current decisions can change the answer (L5).

    `no_select_if_new` lists the clusters only NoSelectIfNew tolerations let through; asked only when needed.
    Only Steady and NoSelectIfNew read the current decisions. With a non-negative Steady weight the
    boost moves exactly onto the selected clusters, which keeps them on top. NoSelectIfNew lets a tainted
    cluster pass only while it is decided: the clusters it filters differ between the two evaluations
    only for tainted clusters that were decided before and are not now (they passed, and now would
    not). A new placement (nothing decided before) never needs the follow-up; a failed evaluation does
    not depend on the current decisions at all.
    """
    if evaluation.status.failed:
        return False
    if any(p.name == "Steady" and p.weight < 0 for p in evaluation.prioritizers):
        return True
    # the few NoSelectIfNew clusters are searched (in C), not the hundreds a decision holds
    dropped = [name for name in no_select_if_new().intersection(before) if name not in after]
    return bool(dropped) and not set(evaluation.available).isdisjoint(dropped)


def next_resync(ctx: EngineContext) -> datetime | None:
    """The next resync: one period after `now`, or, when a timer runs late after a clock jump, the first
    instant of the same schedule past the clock: the missed periods are skipped, not run one by one (as
    Kafka Streams' wall-clock punctuation does). None when disabled or past the last representable instant."""
    seconds = ctx.settings.resync_seconds
    if seconds <= 0:
        return None
    period = max(timedelta(seconds=seconds), _TICK)
    periods = 1 if ctx.clock is None or ctx.clock < ctx.now else (ctx.clock - ctx.now) // period + 1
    try:
        return ctx.now + period * periods
    except OverflowError:
        return None
