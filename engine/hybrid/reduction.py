"""One reduction step (hybrid spec H1–H4, H6): drop vetoed candidates, or the lowest-rated one.

Ratings are integers in hundredths (weight × score + 100 × decisionWeight), so a score below 100 still counts
and ties are exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.hybrid.evaluation import Answer
from engine.hybrid.identity import Ref
from engine.hybrid.state import Rating, Reduction
from topics.placementrule import PRIORITY

__all__ = ["PREDICATE_ROUND", "RATING_ROUND", "rate", "reduce"]

PREDICATE_ROUND = "predicate"
RATING_ROUND = "rating"


def _decided_in(decisions: Sequence[Ref]) -> Callable[[Ref], bool]:
    """Whether a ref is a current decision, in constant time; a decision without kind (pasted status) matches any
    kind."""
    exact = {d.ident for d in decisions if d.kind}
    any_kind = {(d.namespace, d.name) for d in decisions if not d.kind}
    return lambda ref: ref.ident in exact or (ref.namespace, ref.name) in any_kind


def rate(
    candidates: Sequence[Ref], answers: Sequence[Answer], decisions: Sequence[Ref], decision_weight: int
) -> tuple[Rating, ...]:
    """H2/H3: every candidate's rating in hundredths, in candidate order."""
    priorities = [a for a in answers if a.type == PRIORITY]
    decided = _decided_in(decisions)
    bonus = 100 * decision_weight
    return tuple(
        Rating(ref, sum(a.weight * a.scores.get(ref.ident, 0) for a in priorities) + (bonus if decided(ref) else 0))
        for ref in candidates
    )


def reduce(
    candidates: Sequence[Ref],
    passed: Sequence[Ref],
    answers: Sequence[Answer],
    decisions: Sequence[Ref],
    decision_weight: int,
    *,
    round_number: int,
    forced: bool = False,
) -> tuple[tuple[Ref, ...], Reduction]:
    """The surviving candidates (order kept) and the record of what was removed.

    A predicate round (H1) removes every vetoed candidate at once; otherwise one rating round (H4) removes the
    first candidate, in candidate order, among those with the lowest rating.
    """
    if len(passed) < len(candidates):
        kept = {r.ident for r in passed}
        removed = tuple(c for c in candidates if c.ident not in kept)
        return tuple(passed), Reduction(round_number, PREDICATE_ROUND, removed, (), forced)
    ratings = rate(candidates, answers, decisions, decision_weight)
    lowest = min(r.hundredths for r in ratings)
    victim = next(r.ref for r in ratings if r.hundredths == lowest)
    survivors = tuple(c for c in candidates if c.ident != victim.ident)
    return survivors, Reduction(round_number, RATING_ROUND, (victim,), ratings, forced)
