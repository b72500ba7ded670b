"""A reduction on frozen answers run to its decision in one pass (H5, H6, I2) must end where evaluating and
reducing round by round (G, H1-H4) ends: the same survivors, eliminations in the same order and rounds, the same
decisions, and the ratings of the last rating round. Seeded random rules, plus named cases."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hybrid_tables import entries_of, labels

from engine.hybrid.evaluation import collect_answers, evaluate
from engine.hybrid.identity import Ref
from engine.hybrid.reduction import PREDICATE_ROUND, reduce
from engine.hybrid.rundown import RunDown, run_down
from engine.hybrid.state import Reduction
from topics.placementrule import AdvisorSpec, RecommendationEntry

Posts = dict[str, list[RecommendationEntry]]


def _refs(names: list[str]) -> tuple[Ref, ...]:
    return tuple(Ref("ManagedCluster", "", n) for n in names)


def round_by_round(
    candidates: tuple[Ref, ...], advisors: list[AdvisorSpec], posts: Posts, decisions: tuple[Ref, ...], **rule: Any
) -> tuple[tuple[Ref, ...], list[Reduction], tuple[Ref, ...]]:
    """The reference: evaluate, reduce one step, and again, until G decides."""
    steps: list[Reduction] = []
    number = rule["round_number"]
    while True:
        answers = collect_answers(advisors, posts, candidates)
        verdict = evaluate(candidates, rule["replicas"], answers)
        if verdict.decisions is not None:
            return candidates, steps, verdict.decisions
        candidates, step = reduce(
            candidates, verdict.passed, answers, decisions, rule["decision_weight"], round_number=number
        )
        steps.append(step)
        number += rule["advance"]


def one_pass(
    candidates: tuple[Ref, ...], advisors: list[AdvisorSpec], posts: Posts, decisions: tuple[Ref, ...], **rule: Any
) -> RunDown | None:
    """`run_down` as the round lifecycle calls it: only after an evaluation that asks for a reduction."""
    answers = collect_answers(advisors, posts, candidates)
    verdict = evaluate(candidates, rule["replicas"], answers)
    if verdict.decisions is not None:
        return None
    return run_down(candidates, verdict.passed, answers, decisions, forced=not rule["advance"], **rule)


def assert_same_end(
    candidates: tuple[Ref, ...], advisors: list[AdvisorSpec], posts: Posts, decisions: tuple[Ref, ...], **rule: Any
) -> RunDown | None:
    survivors, steps, decided = round_by_round(candidates, advisors, posts, decisions, **rule)
    outcome = one_pass(candidates, advisors, posts, decisions, **rule)
    if outcome is None:
        assert steps == []
        return None
    assert labels(outcome.survivors) == labels(survivors)
    assert labels(outcome.decisions) == labels(decided)
    assert [(s.round, s.reason, labels(s.removed)) for s in outcome.steps] == [
        (s.round, s.reason, labels(s.removed)) for s in steps
    ]
    assert all(s.forced is not rule["advance"] for s in outcome.steps)
    assert outcome.steps[-1].ratings == steps[-1].ratings, "the last step is kept whole, ratings included"
    assert all(s.ratings == () for s in outcome.steps[:-1]), "earlier steps keep no ratings (H6)"
    return outcome


def _random_rule(rng: random.Random) -> tuple[Any, ...]:
    names = [f"c{i:02d}" for i in range(rng.randint(1, 14))]
    advisors = [
        AdvisorSpec(name=f"a{i}", type=rng.choice(["predicate", "priority", "priority", None, "opinion"]),
                    weight=rng.choice([None, 0, 1, 30, 100, -20]))
        for i in range(rng.randint(0, 4))
    ]  # fmt: skip
    if advisors and rng.random() < 0.3:  # a name listed twice shares one answer (A2)
        advisors.append(AdvisorSpec(name=advisors[0].name, type="priority", weight=rng.choice([10, 70])))
    posts: Posts = {}
    for advisor in advisors:
        if rng.random() < 0.25:  # did not answer: abstains (I1)
            continue
        picked = [n for n in [*names, "ghost"] if rng.random() < 0.7]
        items = [f"{n}@{rng.choice([0, 5, 50, 99, 100])}" if rng.random() < 0.6 else n for n in picked]
        posts[advisor.name] = [RecommendationEntry.model_validate(e) for e in entries_of(items)]
    decided = [n for n in names if rng.random() < 0.2]
    decisions = _refs(decided)
    if decided and rng.random() < 0.3:  # a pasted decision without kind matches any kind
        decisions = (Ref("", "", decided[0]), *decisions[1:])
    rule = {
        "replicas": rng.choice([None, 1, 1, 2, 3, len(names) - 1, len(names) + 1]),
        "decision_weight": rng.choice([0, 100, 100, 35, -50]),
        "round_number": rng.randint(1, 5),
        "advance": rng.random() < 0.5,
    }
    return _refs(names), advisors, posts, decisions, rule


def test_one_pass_ends_where_round_by_round_ends_on_random_rules() -> None:
    rng = random.Random(42)
    reduced = predicate_first = 0
    for _ in range(1500):
        candidates, advisors, posts, decisions, rule = _random_rule(rng)
        outcome = assert_same_end(candidates, advisors, posts, decisions, **rule)
        reduced += outcome is not None
        predicate_first += outcome is not None and outcome.steps[0].reason == PREDICATE_ROUND
    assert reduced > 300 and predicate_first > 50, "the seeded rules must exercise both kinds of step"


# (id, candidates, replicas, advisors, posts, decisions, decisionWeight, survivors, removed in order, decisions)
CASES = [
    ("H7-no-advisors-last-by-key-wins", "c1 c2 c3 c4", 1, [], {}, "", 100, "c4", "c1 c2 c3", "c4"),
    ("H7-sticky-decision", "c1 c2 c3 c4", 1, [], {}, "c2", 100, "c2", "c1 c3 c4", "c2"),
    ("H7-weight-zero-not-sticky", "c1 c2 c3", 1, [], {}, "c1", 0, "c3", "c1 c2", "c3"),
    ("H7-two-replicas", "c1 c2 c3 c4", 2, [], {}, "c1", 100, "c1 c4", "c2 c3", "c1 c4"),
    (
        "I2-predicate-then-ratings",
        "c1 c2 c3 c4 c5",
        1,
        [{"name": "p", "type": "predicate"}, {"name": "a"}],
        {"p": ["c1", "c2", "c3", "c4"], "a": ["c1@10", "c2@80", "c3@80", "c5"]},
        "",
        100,
        "c3",
        "c5 c4 c1 c2",
        "c3",
    ),
    (
        "G4-stops-on-priority-consensus",
        "c1 c2 c3 c4",
        1,
        [{"name": "a", "weight": 10}, {"name": "b"}],
        {"a": ["c1", "c2@90", "c4"], "b": ["c2", "c3", "c4@1"]},
        "",
        100,
        "c2 c3",
        "c1 c4",
        "c2",
    ),
]


@pytest.mark.parametrize(
    ("names", "replicas", "advisors", "posts", "decided", "weight", "survivors", "removed", "decisions"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_one_pass_cases(
    names: str,
    replicas: int,
    advisors: list[dict[str, Any]],
    posts: dict[str, list[str]],
    decided: str,
    weight: int,
    survivors: str,
    removed: str,
    decisions: str,
) -> None:
    specs = [AdvisorSpec.model_validate(a) for a in advisors]
    entries = {n: [RecommendationEntry.model_validate(e) for e in entries_of(items)] for n, items in posts.items()}
    rule = {"replicas": replicas, "decision_weight": weight, "round_number": 3, "advance": not advisors}
    outcome = assert_same_end(_refs(names.split()), specs, entries, _refs(decided.split()), **rule)
    assert outcome is not None
    assert labels(outcome.survivors) == survivors.split()
    assert [n for s in outcome.steps for n in labels(s.removed)] == removed.split()
    assert labels(outcome.decisions) == decisions.split()
    rounds = [s.round for s in outcome.steps]
    assert rounds == (list(range(3, 3 + len(rounds))) if not advisors else [3] * len(rounds))
