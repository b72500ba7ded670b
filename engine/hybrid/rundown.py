"""A reduction on answers that cannot change, run to its decision in one pass (hybrid spec H5, H6, I2).

Without advisors nobody is asked between rounds, and in forced finalisation the answers held are frozen. Either
way a candidate's rating stays what it was from round to round: H2 reads only the answers and the decisions,
and decisions do not change during a reduction (G7). The rating rounds therefore remove candidates in one fixed
order, lowest rating first and candidate order among equals (H4), and G4 stops them as soon as few enough are
left or the priority intersection (G3) holds exactly `replicas`. One sort finds that order and a count of the
intersection finds the stop: O(N log N) for the whole reduction, where evaluating round by round costs O(N) per
round and O(N²) in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.hybrid.evaluation import Answer
from engine.hybrid.identity import Ref
from engine.hybrid.reduction import RATING_ROUND, rate, reduce
from engine.hybrid.state import Reduction
from topics.placementrule import PRIORITY

__all__ = ["RunDown", "run_down"]


@dataclass(frozen=True, slots=True)
class RunDown:
    """The outcome: the surviving candidates in order, every step oldest first (only the last one with its
    ratings, as the status keeps it, H6) and the decisions G4 takes."""

    survivors: tuple[Ref, ...]
    steps: tuple[Reduction, ...]
    decisions: tuple[Ref, ...]


def run_down(
    candidates: Sequence[Ref],
    passed: Sequence[Ref],
    answers: Sequence[Answer],
    decisions: Sequence[Ref],
    *,
    decision_weight: int,
    replicas: int | None,
    round_number: int,
    advance: bool,
    forced: bool,
) -> RunDown:
    """Reduce `candidates` until G decides, given the evaluation that asked for a reduction (`passed` is its P).

    `advance`: every step is a round of its own, numbered on from `round_number` (no advisors, H5); otherwise
    every step belongs to `round_number` (forced finalisation, I2).
    """
    steps: list[Reduction] = []
    if len(passed) < len(candidates):  # H1 first; the answers are frozen, so every survivor passes from now on
        candidates, step = reduce(
            candidates, passed, answers, decisions, decision_weight, round_number=round_number, forced=forced
        )
        steps.append(step)
        round_number += advance
    target = len(candidates) if replicas is None else replicas
    priorities = [a for a in answers if a.type == PRIORITY]
    agreed = [all(a.lists(ref) for a in priorities) for ref in candidates]
    ratings = rate(candidates, answers, decisions, decision_weight)
    left, in_agreement = len(candidates), sum(agreed)
    gone: list[int] = []
    for index in sorted(range(len(candidates)), key=lambda i: ratings[i].hundredths):  # stable: H4 tie-break
        if left <= target or in_agreement == target:  # G4 decides
            break
        gone.append(index)
        left -= 1
        in_agreement -= agreed[index]
    removed = [False] * len(candidates)
    for index in gone:
        removed[index] = True
    for number, index in enumerate(gone):
        last = number == len(gone) - 1
        rated = tuple(r for i, r in enumerate(ratings) if not removed[i] or i == index) if last else ()
        steps.append(Reduction(round_number + number * advance, RATING_ROUND, (candidates[index],), rated, forced))
    survivors = tuple(ref for i, ref in enumerate(candidates) if not removed[i])
    if left <= target:
        return RunDown(survivors, tuple(steps), survivors)
    chosen = tuple(ref for i, ref in enumerate(candidates) if agreed[i] and not removed[i])  # the intersection
    return RunDown(survivors, tuple(steps), chosen)
