"""HybridPlacementEngine.explain: where a rule's reduction stands (round, advisors asked and answered, deadline,
candidates, eliminators, reductions, decisions), from its state alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hybrid_tables import clusters, labels, play

from engine.core import ExplainingEngine
from engine.hybrid import HybridPlacementEngine
from engine.hybrid.engine import explain_rule
from topics.k8s import ObjectReference

SPEC = {"replicas": 1, "advisors": [{"name": "veto", "type": "predicate"}, {"name": "cpu", "weight": 60}]}
CPU = ("post", "cpu", ["c1@90", "c2@50", "c3@10"])


def names(refs: list[dict[str, Any]]) -> list[str]:
    return labels(ObjectReference.model_validate(r) for r in refs)


def last_reduction(raw: dict[str, Any] | None) -> tuple[int, str, list[str], dict[str, int]] | None:
    """The latest reduction as (round, reason, removed, ratings in hundredths)."""
    if raw is None:
        return None
    ratings = {r["candidate"]["name"]: r["hundredths"] for r in raw["ratings"]}
    return raw["round"], raw["reason"], names(raw["removed"]), ratings


def test_the_hybrid_engine_explains() -> None:
    assert isinstance(HybridPlacementEngine(), ExplainingEngine)


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (
            [("rule", SPEC)],
            {
                "phase": "waiting for advisors",
                "round": 1,
                "answered": [],
                "missing": ["veto", "cpu"],
                "timedOut": False,
                "deadline": "2026-01-01T00:00:30Z",
                "candidates": ["c1", "c2", "c3"],
                "eliminators": [],
                "decisions": [],
                "reductions": [],
                "last": None,
            },
        ),
        (
            [("rule", SPEC), CPU],
            {
                "phase": "waiting for advisors",
                "round": 1,
                "answered": ["cpu"],
                "missing": ["veto"],
                "timedOut": False,
                "deadline": "2026-01-01T00:00:30Z",
                "candidates": ["c1", "c2", "c3"],
                "eliminators": [],
                "decisions": [],
                "reductions": [],
                "last": None,
            },
        ),
        (
            # the veto drops c3 and a new round starts, asking both advisors again
            [("rule", SPEC), CPU, ("post", "veto", ["c1", "c2"])],
            {
                "phase": "waiting for advisors",
                "round": 2,
                "answered": [],
                "missing": ["veto", "cpu"],
                "timedOut": False,
                "deadline": "2026-01-01T00:00:30Z",
                "candidates": ["c1", "c2"],
                "eliminators": ["c3"],
                "decisions": [],
                "reductions": [(1, ["c3"])],
                "last": (1, "predicate", ["c3"], {}),
            },
        ),
        (
            # the veto never answers: at the deadline it abstains and the ratings decide
            [("rule", SPEC), CPU, ("advance", 31)],
            {
                "phase": "decided",
                "round": 1,
                "answered": ["cpu"],
                "missing": ["veto"],
                "timedOut": True,
                "deadline": None,
                "candidates": ["c1"],
                "eliminators": ["c3", "c2"],
                "decisions": ["c1"],
                "reductions": [(1, ["c3"]), (1, ["c2"])],
                "last": (1, "rating", ["c2"], {"c1": 5400, "c2": 3000}),
            },
        ),
        (
            [("rule", {"replicas": 3})],
            {
                "phase": "decided",
                "round": 1,
                "answered": [],
                "missing": [],
                "timedOut": False,
                "deadline": None,
                "candidates": ["c1", "c2", "c3"],
                "eliminators": [],
                "decisions": ["c1", "c2", "c3"],
                "reductions": [],
                "last": None,
            },
        ),
    ],
)
def test_explain_reports_the_round_the_advisors_and_the_reduction(
    steps: Sequence[Sequence[Any]], expected: dict[str, Any]
) -> None:
    driver = play(clusters("c1", "c2", "c3"), steps)
    assert driver.state is not None
    report = HybridPlacementEngine().explain(driver.key, driver.state, driver.context())
    assert report == explain_rule(driver.key, driver.state)
    assert orjson.loads(orjson.dumps(report)) == report  # JSON as it is
    assert report["placementRule"] == "PlacementRule/default/rule"
    assert report["advisors"]["expected"] == [a["name"] for a in steps[0][1].get("advisors", [])]
    got = {
        "phase": report["phase"],
        "round": report["round"],
        "answered": report["advisors"]["answered"],
        "missing": report["advisors"]["missing"],
        "timedOut": report["advisors"]["timedOut"],
        "deadline": report["deadline"],
        "candidates": names(report["candidates"]),
        "eliminators": names(report["eliminators"]),
        "decisions": names(report["decisions"]),
        "reductions": [(r["round"], r["removed"]) for r in report["reductions"]],
        "last": last_reduction(report.get("lastReduction")),
    }
    assert got == expected
    assert sorted(report["recommendations"]) == sorted(expected["answered"])


def test_explain_neither_opens_nor_closes_a_round() -> None:
    driver = play(clusters("c1", "c2", "c3"), [("rule", SPEC), CPU])
    state = driver.state
    assert state is not None
    later = driver.context()
    later.now = later.now.replace(year=2030)  # long past the deadline: explain still only reports
    first = HybridPlacementEngine().explain(driver.key, state, later)
    assert driver.state is state and state.deadline is not None
    assert first["phase"] == "waiting for advisors"
