"""Evaluation (hybrid spec G) and reduction with exact ratings (H1–H4, A2, A3) as pure-function tables."""

from __future__ import annotations

from typing import Any

import pytest
from hybrid_tables import entries_of, labels

from engine.hybrid.evaluation import collect_answers, evaluate, short_circuit
from engine.hybrid.identity import Ref
from engine.hybrid.reduction import PREDICATE_ROUND, RATING_ROUND, rate, reduce
from topics.placementrule import AdvisorSpec, RecommendationEntry


def refs(*names: str) -> list[Ref]:
    return [Ref("ManagedCluster", "", n) for n in names]


def answers_for(advisors: list[dict[str, Any]], posts: dict[str, list[str]], candidates: list[Ref]) -> list[Any]:
    specs = [AdvisorSpec.model_validate(a) for a in advisors]
    recs = {name: [RecommendationEntry.model_validate(e) for e in entries_of(items)] for name, items in posts.items()}
    return collect_answers(specs, recs, candidates)


P = {"name": "p", "type": "predicate"}
P2 = {"name": "p2", "type": "predicate"}
A = {"name": "a"}
B = {"name": "b", "type": "priority"}
ODD = {"name": "odd", "type": "opinion"}

# (id, candidates, replicas, advisors, posts, expected P, expected decisions or None for "reduce")
EVALUATION = [
    ("G1-no-advisors-P-is-C", "c1 c2 c3", None, [], {}, "c1 c2 c3", "c1 c2 c3"),
    ("G1-predicate-intersection", "c1 c2 c3", None, [P, P2], {"p": ["c1", "c2"], "p2": ["c2", "c3"]}, "c2", "c2"),
    ("G1-P-in-candidate-order", "c1 c2 c3", None, [P], {"p": ["c3", "c1"]}, "c1 c3", "c1 c3"),
    ("G1-predicate-score-ignored", "c1 c2", 1, [P], {"p": ["c1@0"]}, "c1", "c1"),
    ("G1-other-type-used-for-nothing", "c1 c2", None, [ODD], {"odd": []}, "c1 c2", "c1 c2"),
    ("G2-P-empty-decides-nothing", "c1 c2", 1, [P, A], {"p": [], "a": ["c1"]}, "", ""),
    ("G2-predicate-lists-only-strangers", "c1", 1, [P], {"p": ["ghost"]}, "", ""),
    (
        "G3-priority-intersection-when-too-many",
        "c1 c2 c3",
        1,
        [A, B],
        {"a": ["c1", "c2"], "b": ["c2"]},
        "c1 c2 c3",
        "c2",
    ),
    ("G3-priorities-ignored-when-P-fits", "c1 c2 c3", 1, [P, A], {"p": ["c3"], "a": ["c1"]}, "c3", "c3"),
    (
        "G4-consensus-on-replicas",
        "c1 c2 c3 c4",
        2,
        [A, B],
        {"a": ["c1", "c4", "c2"], "b": ["c4", "c2"]},
        "c1 c2 c3 c4",
        "c2 c4",
    ),
    ("G4-candidates-within-replicas", "c1 c2", 3, [A], {"a": []}, "c1 c2", "c1 c2"),
    ("G4-fewer-candidates-than-replicas-keeps-P", "c1 c2 c3", 3, [P], {"p": ["c1", "c3"]}, "c1 c3", "c1 c3"),
    ("G4-replicas-unset-decides-P", "c1 c2 c3", None, [P, A], {"p": ["c1", "c2"], "a": ["c2"]}, "c1 c2", "c1 c2"),
    ("G5-no-consensus-reduces", "c1 c2 c3", 1, [A, B], {"a": ["c1"], "b": ["c2"]}, "c1 c2 c3", None),
    ("G5-consensus-too-large-reduces", "c1 c2 c3", 1, [A], {"a": ["c1", "c2"]}, "c1 c2 c3", None),
    ("G5-no-advisors-more-than-replicas", "c1 c2 c3", 2, [], {}, "c1 c2 c3", None),
    ("G5-veto-then-too-many", "c1 c2 c3", 1, [P, A], {"p": ["c1", "c2"], "a": ["c1", "c2"]}, "c1 c2", None),
    ("G6-empty-priority-list-breaks-consensus", "c1 c2", 1, [A], {"a": []}, "c1 c2", None),
    (
        "A2-duplicate-name-shares-one-answer",
        "c1 c2",
        1,
        [A, {"name": "a", "type": "predicate"}],
        {"a": ["c2"]},
        "c2",
        "c2",
    ),
]


@pytest.mark.parametrize(
    ("candidates", "replicas", "advisors", "posts", "passed", "decisions"),
    [e[1:] for e in EVALUATION],
    ids=[e[0] for e in EVALUATION],
)
def test_hybrid_evaluate(
    candidates: str,
    replicas: int | None,
    advisors: list[dict[str, Any]],
    posts: dict[str, list[str]],
    passed: str,
    decisions: str | None,
) -> None:
    cands = refs(*candidates.split())
    verdict = evaluate(cands, replicas, answers_for(advisors, posts, cands))
    assert labels(verdict.passed) == passed.split()
    if decisions is None:
        assert verdict.decisions is None
    else:
        assert verdict.decisions is not None
        assert labels(verdict.decisions) == decisions.split()


@pytest.mark.parametrize(
    ("candidates", "replicas", "expected"),
    [("", None, True), ("", 1, True), ("c1", 0, True), ("c1", -2, True), ("c1", None, False), ("c1", 1, False)],
)
def test_hybrid_short_circuit_F3(candidates: str, replicas: int | None, expected: bool) -> None:
    assert short_circuit(refs(*candidates.split()), replicas) is expected


def test_hybrid_missing_advisors_abstain_I1() -> None:
    cands = refs("c1", "c2", "c3")
    answers = answers_for([P, A, B], {"a": ["c2"]}, cands)
    assert [a.name for a in answers] == ["a"]
    verdict = evaluate(cands, 1, answers)
    assert labels(verdict.passed) == ["c1", "c2", "c3"], "an absent predicate vetoes nothing"
    assert verdict.decisions is not None and labels(verdict.decisions) == ["c2"], "absent b is not intersected"


# (id, candidates, advisors, posts, decisions, decisionWeight, expected ratings in hundredths)
RATINGS = [
    (
        "H2-doc-arithmetic-52",
        "a b",
        [{"name": "x", "weight": 60}, {"name": "y", "weight": 50}],
        {"x": ["a@20", "b@0"], "y": ["a@80", "b"]},
        "",
        100,
        {"a": 5200, "b": 5000},
    ),
    (
        "H3-fraction-not-truncated",
        "c1 c2",
        [{"name": "x", "weight": 100}, {"name": "y", "weight": 50}],
        {"x": ["c1@60"], "y": ["c2"]},
        "",
        100,
        {"c1": 6000, "c2": 5000},
    ),
    (
        "H3-half-points-exact",
        "c1 c2",
        [{"name": "x", "weight": 33}],
        {"x": ["c1@50", "c2@51"]},
        "",
        100,
        {"c1": 1650, "c2": 1683},
    ),
    (
        "H2-decision-weight-added",
        "c1 c2",
        [{"name": "x", "weight": 60}],
        {"x": ["c2"]},
        "c1",
        100,
        {"c1": 10000, "c2": 6000},
    ),
    ("H2-decision-weight-zero", "c1 c2", [{"name": "x", "weight": 60}], {"x": ["c2"]}, "c1", 0, {"c1": 0, "c2": 6000}),
    ("H2-decision-weight-negative", "c1 c2", [], {}, "c2", -5, {"c1": 0, "c2": -500}),
    ("H2-stale-decision-adds-nothing", "c1 c2", [], {}, "gone", 100, {"c1": 0, "c2": 0}),
    (
        "H2-predicate-never-rated",
        "c1 c2",
        [{"name": "p", "type": "predicate", "weight": 100}, {"name": "x"}],
        {"p": ["c1@100", "c2@10"], "x": ["c1", "c2"]},
        "",
        100,
        {"c1": 10000, "c2": 10000},
    ),
    ("H2-no-entry-scores-0", "c1 c2", [{"name": "x"}], {"x": ["c1"]}, "", 100, {"c1": 10000, "c2": 0}),
    ("A1-weight-defaults-to-100", "c1", [{"name": "x"}], {"x": ["c1@7"]}, "", 100, {"c1": 700}),
    (
        "A1-weight-zero-and-negative",
        "c1 c2",
        [{"name": "x", "weight": 0}, {"name": "y", "weight": -10}],
        {"x": ["c1"], "y": ["c2@50"]},
        "",
        100,
        {"c1": 0, "c2": -500},
    ),
    (
        "A2-duplicate-name-counts-per-entry",
        "c1 c2",
        [{"name": "x", "weight": 60}, {"name": "x", "weight": 40}],
        {"x": ["c1@50"]},
        "",
        100,
        {"c1": 5000, "c2": 0},
    ),
    (
        "E6-duplicate-entries-count-once",
        "c1 c2",
        [{"name": "x"}],
        {"x": ["c1@30", "c1@40"]},
        "",
        100,
        {"c1": 4000, "c2": 0},
    ),
    (
        "H2-unanswered-advisor-carries-no-weight",
        "c1",
        [{"name": "x"}, {"name": "y"}],
        {"x": ["c1@10"]},
        "",
        100,
        {"c1": 1000},
    ),
]


@pytest.mark.parametrize(
    ("candidates", "advisors", "posts", "decisions", "weight", "expected"),
    [r[1:] for r in RATINGS],
    ids=[r[0] for r in RATINGS],
)
def test_hybrid_ratings(
    candidates: str,
    advisors: list[dict[str, Any]],
    posts: dict[str, list[str]],
    decisions: str,
    weight: int,
    expected: dict[str, int],
) -> None:
    cands = refs(*candidates.split())
    ratings = rate(cands, answers_for(advisors, posts, cands), refs(*decisions.split()), weight)
    assert {r.ref.name: r.hundredths for r in ratings} == expected


# (id, candidates, passed, advisors, posts, decisions, expected survivors, removed, reason)
REDUCTIONS = [
    (
        "H1-predicate-round-removes-all-vetoed",
        "c1 c2 c3 c4",
        "c2 c4",
        [A],
        {"a": ["c1"]},
        "",
        "c2 c4",
        "c1 c3",
        PREDICATE_ROUND,
    ),
    (
        "H4-lowest-removed",
        "c1 c2 c3",
        "c1 c2 c3",
        [A],
        {"a": ["c1@90", "c2@10", "c3@50"]},
        "",
        "c1 c3",
        "c2",
        RATING_ROUND,
    ),
    ("H4-tie-first-in-order", "c1 c2 c3", "c1 c2 c3", [A], {"a": ["c2"]}, "", "c2 c3", "c1", RATING_ROUND),
    (
        "H4-survivors-keep-order",
        "c1 c2 c3 c4",
        "c1 c2 c3 c4",
        [A],
        {"a": ["c4", "c3", "c1"]},
        "",
        "c1 c3 c4",
        "c2",
        RATING_ROUND,
    ),
    ("H7-no-advisors-first-falls", "c1 c2 c3", "c1 c2 c3", [], {}, "", "c2 c3", "c1", RATING_ROUND),
    ("H7-decision-sticky", "c1 c2 c3", "c1 c2 c3", [], {}, "c1", "c1 c3", "c2", RATING_ROUND),
]


@pytest.mark.parametrize(
    ("candidates", "passed", "advisors", "posts", "decisions", "survivors", "removed", "reason"),
    [r[1:] for r in REDUCTIONS],
    ids=[r[0] for r in REDUCTIONS],
)
def test_hybrid_reduce(
    candidates: str,
    passed: str,
    advisors: list[dict[str, Any]],
    posts: dict[str, list[str]],
    decisions: str,
    survivors: str,
    removed: str,
    reason: str,
) -> None:
    cands = refs(*candidates.split())
    kept, reduction = reduce(
        cands,
        refs(*passed.split()),
        answers_for(advisors, posts, cands),
        refs(*decisions.split()),
        100,
        round_number=4,
    )
    assert labels(kept) == survivors.split()
    assert labels(reduction.removed) == removed.split()
    assert reduction.reason == reason
    assert reduction.round == 4
    assert bool(reduction.ratings) is (reason == RATING_ROUND), "ratings are recorded for rating rounds only (H6)"
    if reduction.ratings:
        assert labels(r.ref for r in reduction.ratings) == candidates.split(), "every candidate's rating"
