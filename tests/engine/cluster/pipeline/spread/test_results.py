"""Spread results: the PlacementSatisfied condition when the loop stops short, explain data, decision groups,
taints and topologies, and the array-based steps for many classes giving the same answers."""

from __future__ import annotations

from typing import Any

import pytest

import tests.engine.cluster.test_conformance as conformance
from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.spread import selection
from tests.engine.cluster.cluster_builders import (
    World,
    a_cluster,
    a_placement,
    a_world,
    condition,
    decided,
    one_set_world,
    run,
)
from tests.engine.cluster.pipeline.spread.test_selection import HARD, LOOP, _sized, in_zone, spread_scores
from tests.engine.cluster.pipeline.spread.test_terms import builtin, spread, zone


# --- results -------------------------------------------------------------------------------------------------------
def _two_regions() -> World:
    return one_set_world(
        *(a_cluster(f"r1z1{c}").with_labels(region="r1", zone="z1") for c in "abc"),
        a_cluster("r1z2a").with_labels(region="r1", zone="z2"),
        a_cluster("r2z3a").with_labels(region="r2", zone="z3"),
    )


REGION = {"topologyKey": "region", "topologyKeyType": "Label"}
RESULTS = [
    # exhausted: the old message
    (
        _sized(a=1, b=1),
        spread(zone(), numberOfClusters=3),
        2,
        ("False", "NotAllDecisionsScheduled", "1 cluster decisions unscheduled"),
    ),
    # blocked by the zone term, behind a soft region term
    (
        _two_regions(),
        spread(REGION, HARD, numberOfClusters=5),
        4,
        (
            "False",
            "NotAllDecisionsScheduled",
            "1 cluster decisions unscheduled: maxSkew of spreadConstraints[1] (zone) cannot be satisfied",
        ),
    ),
    # blocked by the region term
    (
        _two_regions(),
        spread({**REGION, "whenUnsatisfiable": "DoNotSchedule"}, HARD, numberOfClusters=5),
        3,
        (
            "False",
            "NotAllDecisionsScheduled",
            "2 cluster decisions unscheduled: maxSkew of spreadConstraints[0] (region) cannot be satisfied",
        ),
    ),
    # blocked without numberOfClusters: nothing was asked for, so nothing is unscheduled
    (_sized(a=3, b=1), spread(HARD), 3, ("True", "AllDecisionsScheduled", "All cluster decisions scheduled")),
    # numberOfClusters 0: no step at all
    (
        _sized(a=3, b=1),
        spread(HARD, numberOfClusters=0),
        0,
        ("False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate"),
    ),
]


@pytest.mark.parametrize(
    ("world", "spec", "selected", "satisfied"),
    RESULTS,
    ids=["exhausted", "blocked-by-zone", "blocked-by-region", "blocked-without-number", "zero"],
)
def test_satisfied_condition(world: Any, spec: dict[str, Any], selected: int, satisfied: tuple[str, str, str]) -> None:
    result = run(world, a_placement(spec))
    assert len(result.selected) == selected
    wanted = spec.get("numberOfClusters")
    assert result.unscheduled == (0 if wanted is None else wanted - selected)
    assert condition(result, SATISFIED) == satisfied


@pytest.mark.parametrize(
    ("world", "spec"),
    [
        (_sized(a=1), spread(HARD)),
        (_sized(a=9, b=1), spread(HARD)),
        (_sized(a=1, b=1, c=1), spread(HARD)),
        (_two_regions(), spread({**REGION, "whenUnsatisfiable": "DoNotSchedule"}, HARD)),
    ],
    ids=["one", "lopsided", "level", "regions"],
)
def test_the_first_step_never_blocks(world: World, spec: dict[str, Any]) -> None:
    result = run(world, a_placement(spec))
    assert len(result.selected) >= 1
    assert condition(result, SATISFIED)[1] == "AllDecisionsScheduled"


def test_explain_lists_spread_at_its_place_and_the_filter() -> None:
    world = one_set_world(in_zone("a1", "a"), in_zone("a2", "a"), in_zone("b1", "b"), a_cluster("n1"))
    hard = zone(maxSkew=2, whenUnsatisfiable="DoNotSchedule")
    spec = spread(hard, prioritizerPolicy={"configurations": [builtin("ResourceAllocatableCPU")]})
    result = run(world, a_placement(spec))
    assert [(p.name, p.weight) for p in result.prioritizers] == [
        ("Balance", 1),
        ("Steady", 1),
        ("Spread", 2),
        ("ResourceAllocatableCPU", 1),
    ]
    assert result.filtered_by == {"n1": "Spread"}
    assert result.selected == ["a1", "a2", "b1"]
    assert result.ranked() == ["b1", "a1", "a2"]
    assert spread_scores(result) == {"a1": 0, "a2": 0, "b1": 100}  # step 2: a2 -100, b1 100; step 3: a2 alone
    assert result.scores == result.passing_scores == {"a1": 100, "a2": 100, "b1": 300}


def test_decision_groups_follow_names_not_selection_order() -> None:
    groups = [
        {"groupName": f"zone-{z}", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": z}}}}
        for z in ("b", "a")
    ]
    spec = spread(zone(), numberOfClusters=3, decisionStrategy={"groupStrategy": {"decisionGroups": groups}})
    result = run(_sized(a=2, b=2), a_placement(spec))
    assert result.selected == ["a1", "b1", "a2"]
    assert [(g.index, g.name, g.clusters) for g in result.groups] == [
        (0, "zone-b", ("b1",)),
        (1, "zone-a", ("a1", "a2")),
    ]


# --- taints --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("effect", "current", "expected"),
    [
        ("NoSelectIfNew", [], ["a1", "a2", "a3"]),  # b1 is new: filtered, zone b does not exist
        ("NoSelectIfNew", ["b1"], ["a1", "a2", "b1"]),  # b1 is held: tolerated, zone b holds a at 2
        ("PreferNoSelect", [], ["a1", "a2", "b1"]),  # no effect
    ],
    ids=["if-new-not-held", "if-new-held", "prefer"],
)
def test_taint_effects_and_topologies(effect: str, current: list[str], expected: list[str]) -> None:
    world = one_set_world(
        *(in_zone(f"a{i}", "a") for i in (1, 2, 3)), in_zone("b1", "b").with_taint("drain", effect=effect)
    )
    steady_off = {"prioritizerPolicy": {"configurations": [builtin("Steady", 0)]}}
    result = run(world, a_placement(spread(HARD, **steady_off)), current=current)
    assert decided(result) == expected


def test_no_timer_of_its_own() -> None:
    result = run(_sized(a=2, b=1), a_placement(spread(HARD, numberOfClusters=2)))
    assert result.due is None


def test_clusters_outside_a_bound_set_form_nothing() -> None:
    world = a_world().with_set("set1").with_set("set2").with_binding("ns1", "set1")
    world.with_clusters(in_zone("a1", "a").in_set("set1"), in_zone("a2", "a").in_set("set1"))
    world.with_clusters(in_zone("b1", "b").in_set("set2"))
    result = run(world, a_placement(spread(HARD)))
    assert decided(result) == ["a1", "a2"]


@pytest.mark.parametrize(
    ("world", "spec"),
    [(world, spec) for world, spec, _ in LOOP] + [(world, spec) for world, spec, _, _ in RESULTS],
    ids=[f"loop-{i}" for i in range(len(LOOP))] + [f"results-{i}" for i in range(len(RESULTS))],
)
def test_many_classes_take_the_same_steps(world: World, spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """With many classes a step runs over arrays instead of lists: the same picks, scores and stop."""
    few = run(world, a_placement(spec))
    monkeypatch.setattr(selection, "_FEW", 0)
    many = run(world, a_placement(spec))
    assert (many.selected, many.passing_scores, many.conditions) == (few.selected, few.passing_scores, few.conditions)


@pytest.mark.parametrize(
    "case",
    [case for case in conformance.CASES if case["id"].startswith("spread/")],
    ids=[case["id"] for case in conformance.CASES if case["id"].startswith("spread/")],
)
def test_spread_conformance_cases_with_many_classes(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection, "_FEW", 0)
    conformance.test_cluster_conformance_case(case)


def test_valid_terms_with_no_candidate_left() -> None:
    no_match = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"zone": "none"}}}}]
    for spec in (spread(HARD, predicates=no_match), spread(zone(), numberOfClusters=1, predicates=no_match)):
        result = run(_sized(a=1, b=1), a_placement(spec))
        assert decided(result) == [] and result.scores == result.passing_scores == {}
        assert condition(result, MISCONFIGURED)[0] == "False"
        assert condition(result, SATISFIED)[1] == "NoManagedClusterMatched"
