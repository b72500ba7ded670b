"""Evaluation of one complete (or forcibly closed) round (hybrid spec G).

The functions here see only the candidates, the decisions and the answers that take part; which advisors take part
(all of them, or the ones that answered before the deadline) is decided by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.hybrid.identity import Ident, Ref, index_entries
from topics.placementrule import PREDICATE, PRIORITY, AdvisorSpec, RecommendationEntry

__all__ = ["Answer", "Verdict", "collect_answers", "evaluate", "short_circuit"]


@dataclass(frozen=True, slots=True)
class Answer:
    """One spec advisor entry together with its advisor's answer, reduced to candidate scores.

    A name listed twice in the spec yields two answers sharing the same scores (A2).
    """

    name: str
    type: str
    weight: int
    scores: Mapping[Ident, int]

    def lists(self, ref: Ref) -> bool:
        """Whether the answer names `ref`."""
        return ref.ident in self.scores


@dataclass(frozen=True, slots=True)
class Verdict:
    """G's outcome: `decisions` when the round decides (G2, G4), else None and a reduction must follow (G5).

    `passed` is P, the candidates every predicate advisor accepted, in candidate order.
    """

    passed: tuple[Ref, ...]
    decisions: tuple[Ref, ...] | None


def collect_answers(
    advisors: Sequence[AdvisorSpec],
    recommendations: Mapping[str, Sequence[RecommendationEntry]],
    candidates: Sequence[Ref],
) -> list[Answer]:
    """The answers that take part: one per spec entry whose advisor has posted; the others abstain (I1)."""
    indexed: dict[str, Mapping[Ident, int]] = {}
    answers: list[Answer] = []
    for advisor in advisors:
        entries = recommendations.get(advisor.name)
        if entries is None:
            continue
        if advisor.name not in indexed:
            indexed[advisor.name] = index_entries(entries, candidates)
        answers.append(Answer(advisor.name, advisor.effective_type, advisor.effective_weight, indexed[advisor.name]))
    return answers


def short_circuit(candidates: Sequence[Ref], replicas: int | None) -> bool:
    """F3: nothing to choose from, or nothing to choose."""
    return not candidates or (replicas is not None and replicas <= 0)


def evaluate(candidates: Sequence[Ref], replicas: int | None, answers: Sequence[Answer]) -> Verdict:
    """G1–G5 over the candidates in order."""
    predicates = [a for a in answers if a.type == PREDICATE]
    priorities = [a for a in answers if a.type == PRIORITY]
    passed = tuple(c for c in candidates if all(a.lists(c) for a in predicates))
    if not passed:
        return Verdict(passed, ())
    target = len(passed) if replicas is None else replicas
    chosen = passed
    if len(passed) > target:
        chosen = tuple(c for c in passed if all(a.lists(c) for a in priorities))
    target2 = len(chosen) if replicas is None else replicas
    if len(chosen) == target2 or len(candidates) <= target2:
        return Verdict(passed, chosen)
    return Verdict(passed, None)
