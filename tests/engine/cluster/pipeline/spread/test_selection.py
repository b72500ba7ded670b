"""Spread selection: topologies (labels or claims, hierarchical, only candidates), the spread filter, the term
and normalised scores, the one-at-a-time loop under the skew limits, and what the result reports."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.evaluate import Evaluation
from engine.cluster.pipeline.spread.counts import term_score, term_scores
from engine.cluster.pipeline.spread.selection import normalize
from engine.inventory import Inventory
from tests.engine.cluster.cluster_builders import (
    NOW,
    ClusterBuilder,
    World,
    a_cluster,
    a_placement,
    condition,
    decided,
    evaluated,
    one_set_world,
    run,
)
from tests.engine.cluster.pipeline.spread.test_terms import builtin, spread, zone
from topics.inventory import ManagedCluster

HARD = zone(whenUnsatisfiable="DoNotSchedule")
EXACT_SPREAD = {"prioritizerPolicy": {"mode": "Exact", "configurations": [builtin("Spread")]}}
EXACT_NONE = {"prioritizerPolicy": {"mode": "Exact"}}


def in_zone(name: str, value: str, **labels: str) -> ClusterBuilder:
    return a_cluster(name).with_labels(zone=value, **labels)


def zones(result: Evaluation) -> dict[str, int]:
    """How many selected clusters each zone holds (the zone is the name's first letter in these worlds)."""
    return dict(Counter(name[0] for name in decided(result)))


def spread_scores(result: Evaluation) -> dict[str, int]:
    return next(p.scores for p in result.prioritizers if p.name == "Spread")


# --- the enhancement's worked example ------------------------------------------------------------------------------
def test_enhancement_worked_example() -> None:
    rows = [
        ("c1", 50, "us-east", "us-east-1a"),
        ("c2", 50, "us-east", "us-east-1a"),
        ("c3", 0, "us-east", "us-east-1b"),
    ]
    rows += [("c4", 0, "us-west", "us-west-1a"), ("c5", 50, "us-west", "us-west-1a")]
    world = one_set_world(*(a_cluster(n).with_labels(region=r, zone=z) for n, _, r, z in rows))
    for name, score, _, _ in rows:
        world.with_score(name, "p", {"p": score})
    addon = {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "p", "scoreName": "p"}}, "weight": 1}
    spec = spread(
        {"topologyKey": "region", "topologyKeyType": "Label"},
        zone(maxSkew=1, whenUnsatisfiable="DoNotSchedule"),
        numberOfClusters=2,
        prioritizerPolicy={"mode": "Exact", "configurations": [addon, builtin("Spread", 2)]},
    )
    result = run(world, a_placement(spec))
    assert decided(result) == ["c1", "c5"]
    assert result.selected == ["c1", "c5"]  # c1 in step 1 (tie at 50, by name), c5 in step 2
    assert result.passing_scores == {"c1": 50, "c2": -150, "c3": 200, "c4": -200, "c5": 250}
    assert result.scores == {"c1": 50, "c5": 250}  # what the decision carries (K3)
    assert spread_scores(result) == {"c1": 0, "c2": -100, "c3": 100, "c4": -100, "c5": 100}
    plain = evaluated(world, a_placement(spec))  # the closing pass is explain data: not run for a decision
    assert plain.scores == result.scores
    with pytest.raises(ValueError, match="explain"):
        plain.passing_scores  # noqa: B018
    assert condition(result, SATISFIED) == ("True", "AllDecisionsScheduled", "All cluster decisions scheduled")
    # step 2's raw scores: c3 0 * 64 + 63, c4 and c5 63 * 64 + 0
    assert normalize([63, 4032, 4032]) == [-100, 100, 100]


# --- term scores, raw scores, normalisation ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("inside", "count", "high", "low", "score"),
    [
        (True, 0, 2, 0, 63),
        (True, 1, 2, 0, 31),
        (True, 2, 2, 0, 0),
        (True, 1, 3, 0, 42),
        (True, 1, 1, 1, 0),
        (True, 0, 0, 0, 0),
        (False, 0, 2, 0, 0),
    ],
    ids=["least", "middle", "most", "two-thirds", "level", "nothing-yet", "not-in-term"],
)
def test_term_score(inside: bool, count: int, high: int, low: int, score: int) -> None:
    got = term_scores(np.array([inside]), np.array([count]), np.array([high]), np.array([low]))
    assert got.tolist() == [score]
    if inside:
        assert term_score(count, high, low) == score


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ([5, 5], [0, 0]),
        ([7], [0]),
        ([0, 1, 2], [-100, 0, 100]),
        ([0, 1, 3], [-100, -34, 100]),
        ([0, 63, 4032], [-100, -97, 100]),
        ([2**48 - 1, 0], [100, -100]),
    ],
    ids=["all-equal", "one", "linear", "floored", "kep-scale", "eight-terms"],
)
def test_normalize(raw: list[int], normalized: list[int]) -> None:
    assert normalize(raw) == normalized


def test_eight_terms_raw_score_stays_exact() -> None:
    """Eight terms of 63 make 64**8 - 1, below 2**48: the earliest term always dominates."""
    keys = [f"k{i}" for i in range(8)]
    world = one_set_world(
        a_cluster("x").with_labels(dict.fromkeys(keys, "1")),
        a_cluster("y").with_labels(dict.fromkeys(keys, "2")),
        a_cluster("z").with_labels(dict.fromkeys(keys, "1")),
    )
    terms = [{"topologyKey": key, "topologyKeyType": "Label"} for key in keys]
    result = run(world, a_placement(spread(*terms, numberOfClusters=2, **EXACT_SPREAD)))
    assert decided(result) == ["x", "y"]
    assert spread_scores(result) == {"x": 0, "y": 100, "z": 0}


# --- values and topologies -----------------------------------------------------------------------------------------
def _claim_world() -> Inventory:
    world = one_set_world(
        a_cluster("x1").with_labels(zone="b").with_claims(zone="a"),
        a_cluster("x2").with_labels(zone="c").with_claims(zone="a"),
        a_cluster("y1").with_labels(zone="a").with_claims(zone="b"),
    )
    inventory = world.inventory()
    # duplicate claims: the last one wins
    raw = {
        "metadata": {"name": "y2", "labels": {"cluster.open-cluster-management.io/clusterset": "set1", "zone": "a"}},
        "status": {"clusterClaims": [{"name": "zone", "value": "a"}, {"name": "zone", "value": "b"}]},
    }
    inventory.apply(ManagedCluster.model_validate(raw), NOW)
    return inventory


@pytest.mark.parametrize(
    ("key_type", "wanted", "expected"),
    [("Claim", 2, ["x1", "y1"]), ("Label", 2, ["x1", "x2"]), ("Claim", None, ["x1", "x2", "y1", "y2"])],
    ids=["claims-not-labels", "labels-not-claims", "last-duplicate-claim-wins"],
)
def test_values_come_from_the_key_type_only(key_type: str, wanted: int | None, expected: list[str]) -> None:
    """Claims: a = {x1, x2}, b = {y1, y2 (its last duplicate)}; labels: a = {y1, y2}, b = {x1}, c = {x2}."""
    term = zone(topologyKeyType=key_type, whenUnsatisfiable="DoNotSchedule")
    spec = spread(term, **EXACT_NONE) if wanted is None else spread(term, numberOfClusters=wanted, **EXACT_NONE)
    assert decided(run(_claim_world(), a_placement(spec))) == expected


def test_empty_label_is_a_value() -> None:
    world = one_set_world(in_zone("e1", ""), in_zone("e2", ""), in_zone("f1", "f"), a_cluster("n1"))
    result = run(world, a_placement(spread(HARD, **EXACT_NONE)))
    assert decided(result) == ["e1", "e2", "f1"]
    assert result.filtered_by == {"n1": "Spread"}


def test_topologies_are_hierarchical() -> None:
    """Both regions have a zone z1: two topologies. A region with a single zone puts no limit on it."""
    names = [("e1", "east", "z1"), ("e2", "east", "z1"), ("e3", "east", "z2"), ("w1", "west", "z1")]
    names += [("w2", "west", "z1")]
    world = one_set_world(*(a_cluster(n).with_labels(region=r, zone=z) for n, r, z in names))
    region = {"topologyKey": "region", "topologyKeyType": "Label"}
    flat = run(world, a_placement(spread(HARD, **EXACT_NONE)))
    nested = run(world, a_placement(spread(region, HARD, **EXACT_NONE)))
    assert decided(flat) == ["e1", "e2", "e3"]  # z1 (4 clusters) may hold z2's 1 + 1
    assert decided(nested) == ["e1", "e2", "e3", "w1", "w2"]  # east: z1 2, z2 1; west has one zone


def _excluded(way: str) -> World:
    """Zones a (2 clusters) and b (1) of candidates, and c1, the only cluster of zone c, excluded in some way."""
    world = one_set_world(
        in_zone("a1", "a", env="prod"), in_zone("a2", "a", env="prod"), in_zone("b1", "b", env="prod")
    )
    c1 = in_zone("c1", "c", env="prod")
    excluded = {
        "predicate": c1.with_labels(env="dev").in_set("set1"),
        "terminating": c1.being_deleted().in_set("set1"),
        "taint": c1.with_taint("maint").in_set("set1"),
        "other-set": c1.in_set("set2"),
    }[way]
    return world.with_set("set2").with_clusters(excluded)


@pytest.mark.parametrize("way", ["predicate", "terminating", "taint", "other-set"])
def test_only_candidates_form_topologies(way: str) -> None:
    predicate = {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    result = run(_excluded(way), a_placement(spread(HARD, predicates=[predicate])))
    # zone c does not exist: a may hold b's 1 + 1
    assert decided(result) == ["a1", "a2", "b1"]


def test_a_zone_that_exists_holds_the_others() -> None:
    world = one_set_world(*(in_zone(f"a{i}", "a") for i in (1, 2, 3)), in_zone("b1", "b"), in_zone("c1", "c"))
    result = run(world, a_placement(spread(HARD)))
    assert decided(result) == ["a1", "a2", "b1", "c1"]
    assert result.passing_scores.keys() == {"a1", "a2", "a3", "b1", "c1"}  # a3 was held back: scored, not filtered
    assert result.scores.keys() == {"a1", "a2", "b1", "c1"}
    assert result.filtered_by == {}


# --- the spread filter ---------------------------------------------------------------------------------------------
def test_spread_filter_needs_every_term_up_to_the_last_hard_one() -> None:
    region = {"topologyKey": "region", "topologyKeyType": "Label"}
    world = one_set_world(
        a_cluster("a1").with_labels(region="r", zone="a").with_resources({"cpu": "4"}),
        a_cluster("b1").with_labels(region="r", zone="b").with_resources({"cpu": "8"}),
        a_cluster("n1").with_labels(zone="a").with_resources({"cpu": "64"}),  # no region
        a_cluster("n2").with_labels(region="r").with_resources({"cpu": "64"}),  # no zone
    )
    cpu = {"prioritizerPolicy": {"mode": "Exact", "configurations": [builtin("ResourceAllocatableCPU")]}}
    result = run(world, a_placement(spread(region, HARD, **cpu)))
    assert result.filtered_by == {"n1": "Spread", "n2": "Spread"}
    assert decided(result) == ["a1", "b1"]
    # the prioritizers see the remaining candidates only: the CPU range is 4..8, not 4..64
    assert result.prioritizers[0].scores == {"a1": -100, "b1": 100}


def test_soft_term_without_value_is_selectable_and_counts_nowhere() -> None:
    world = one_set_world(in_zone("a1", "a"), in_zone("b1", "b"), a_cluster("n1"))
    result = run(world, a_placement(spread(zone(), numberOfClusters=3, **EXACT_SPREAD)))
    assert decided(result) == ["a1", "b1", "n1"]
    assert result.selected == ["a1", "b1", "n1"]  # step 2: b1 scores 63 raw, n1 0
    assert spread_scores(result) == {"a1": 0, "b1": 100, "n1": 0}
    assert result.filtered_by == {}


# --- the loop ------------------------------------------------------------------------------------------------------
def _sized(**sizes: int) -> World:
    return one_set_world(*(in_zone(f"{z}{i}", z) for z, n in sizes.items() for i in range(1, n + 1)))


LOOP = [
    # a single hard term: each zone gets min(its size, the smallest size + maxSkew)
    (_sized(a=5, b=2, c=3), spread(HARD), {"a": 3, "b": 2, "c": 3}),
    (_sized(a=5, b=2, c=3), spread(zone(maxSkew=2, whenUnsatisfiable="DoNotSchedule")), {"a": 4, "b": 2, "c": 3}),
    (_sized(a=4, b=1), spread(zone(maxSkew=2, whenUnsatisfiable="DoNotSchedule")), {"a": 3, "b": 1}),
    # a group of one topology never blocks
    (_sized(a=3), spread(HARD), {"a": 3}),
    # soft terms never block, whatever their maxSkew
    (_sized(a=3, b=1), spread(zone(maxSkew=1)), {"a": 3, "b": 1}),
    (_sized(a=3, b=1), spread(zone(maxSkew=7)), {"a": 3, "b": 1}),
    # numberOfClusters caps the loop; the spread keeps the zones level
    (_sized(a=5, b=2, c=3), spread(HARD, numberOfClusters=4), {"a": 2, "b": 1, "c": 1}),
    (_sized(a=5, b=2, c=3), spread(zone(), numberOfClusters=6), {"a": 2, "b": 2, "c": 2}),
    (_sized(a=5, b=2, c=3), spread(zone(), numberOfClusters=0), {}),
]


@pytest.mark.parametrize(("world", "spec", "per_zone"), LOOP, ids=[f"{i}" for i in range(len(LOOP))])
def test_selection_loop(world: Any, spec: dict[str, Any], per_zone: dict[str, int]) -> None:
    result = run(world, a_placement(spec))
    assert zones(result) == per_zone
    assert len(result.selected) == sum(per_zone.values())


def test_ties_go_to_the_smallest_name_and_steps_follow_scores() -> None:
    result = run(_sized(a=2, b=2), a_placement(spread(zone(), numberOfClusters=3)))
    assert result.selected == ["a1", "b1", "a2"]  # a1 by name; b1 for the spread; then a2 by name
    assert decided(result) == ["a1", "a2", "b1"]


def test_negative_weight_packs_but_hard_terms_still_limit() -> None:
    packing = {"prioritizerPolicy": {"mode": "Exact", "configurations": [builtin("Spread", -1)]}}
    world = _sized(a=3, b=3)
    soft = run(world, a_placement(spread(zone(), numberOfClusters=3, **packing)))
    hard = run(
        world, a_placement(spread(zone(maxSkew=1, whenUnsatisfiable="DoNotSchedule"), numberOfClusters=3, **packing))
    )
    assert decided(soft) == ["a1", "a2", "a3"]
    assert zones(hard) == {"a": 2, "b": 1}


@pytest.mark.parametrize(
    ("steady", "expected"), [(1, ["a1", "b1"]), (5, ["a1", "a2"])], ids=["spread-wins", "steady-wins"]
)
def test_existing_decisions_act_only_through_steady(steady: int, expected: list[str]) -> None:
    spec = spread(zone(), numberOfClusters=2, prioritizerPolicy={"configurations": [builtin("Steady", steady)]})
    result = run(_sized(a=2, b=2), a_placement(spec), current=["a1", "a2"])
    assert decided(result) == expected


def test_balance_counts_enter_the_base_score() -> None:
    result = run(_sized(a=2, b=2), a_placement(spread(HARD, numberOfClusters=2)), balance={"a1": 4, "b1": 4})
    assert decided(result) == ["a2", "b2"]


def test_negative_number_of_clusters_is_misconfigured_before_the_loop() -> None:
    result = run(_sized(a=2, b=2), a_placement(spread(HARD, numberOfClusters=-1)))
    assert condition(result, MISCONFIGURED) == ("True", "Misconfigured", ":numberOfClusters cannot be negative: -1")
    assert decided(result) == [] and result.prioritizers == []
