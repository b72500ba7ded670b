"""Spread terms: which placements have terms, defaults, validation (a Misconfigured condition with plugin Spread),
and the Spread prioritizer's weight (a default of 2 in Additive mode, only with terms)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.evaluate import Evaluation
from engine.cluster.pipeline.spread.terms import SpreadTerm, parse_spread
from tests.engine.cluster.cluster_builders import a_cluster, a_placement, condition, decided, one_set_world, run

ZONES = (
    a_cluster("a1").with_labels(zone="a"),
    a_cluster("a2").with_labels(zone="a"),
    a_cluster("b1").with_labels(zone="b"),
    a_cluster("b2").with_labels(zone="b"),
)


def zone(**fields: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "topologyKeyType": "Label", **fields}


def spread(*terms: Any, **spec: Any) -> dict[str, Any]:
    return {"spreadPolicy": {"spreadConstraints": list(terms)}, **spec}


def builtin(name: str, weight: int = 1) -> dict[str, Any]:
    return {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}, "weight": weight}


def weights(result: Evaluation) -> list[tuple[str, int]]:
    return [(p.name, p.weight) for p in result.prioritizers]


def outcome(result: Evaluation) -> tuple[Any, ...]:
    return (decided(result), result.passing_scores, weights(result), result.filtered_by, result.conditions)


# --- which placements have terms -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "policy",
    [None, {}, {"spreadConstraints": None}, {"spreadConstraints": []}],
    ids=["null", "empty-object", "null-list", "empty-list"],
)
def test_no_terms_evaluates_as_without_spread(policy: Any) -> None:
    world = one_set_world(*ZONES)
    plain = run(world, a_placement({"numberOfClusters": 2}))
    with_policy = run(world, a_placement({"numberOfClusters": 2, "spreadPolicy": policy}))
    assert outcome(with_policy) == outcome(plain)
    assert weights(plain) == [("Balance", 1), ("Steady", 1)]
    assert decided(plain) == ["a1", "a2"]


# --- defaults ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "term"),
    [
        (zone(), SpreadTerm("zone", False, 1, False)),
        (zone(maxSkew=None, whenUnsatisfiable=None), SpreadTerm("zone", False, 1, False)),
        (zone(maxSkew=3, whenUnsatisfiable="DoNotSchedule"), SpreadTerm("zone", False, 3, True)),
        (zone(maxSkew=2.0), SpreadTerm("zone", False, 2, False)),
        ({"topologyKey": "zone", "topologyKeyType": "Claim"}, SpreadTerm("zone", True, 1, False)),
        (zone(weight=5, other="x"), SpreadTerm("zone", False, 1, False)),
    ],
    ids=["absent", "null", "given", "integral-double", "claim", "extra-fields-ignored"],
)
def test_term_defaults(raw: dict[str, Any], term: SpreadTerm) -> None:
    policy = parse_spread({"spreadConstraints": [raw]})
    assert policy.error is None
    assert policy.terms == (term,)


@pytest.mark.parametrize(
    "key",
    ["zone", "topology.kubernetes.io/zone", "a" * 316, "Z_1.x", "example.com/Zone-1", "1"],
    ids=["plain", "prefixed", "316-chars", "mixed", "prefix-and-upper-name", "one-char"],
)
def test_valid_topology_keys(key: str) -> None:
    assert parse_spread({"spreadConstraints": [zone(topologyKey=key)]}).error is None


# --- validation ----------------------------------------------------------------------------------------------------
P = "Spread:spreadConstraints"
INVALID = [
    ([zone()] * 9, "Spread:spreadConstraints cannot have more than 8 items: 9"),
    ([{"topologyKey": "-"}] * 9, "Spread:spreadConstraints cannot have more than 8 items: 9"),
    ([{"topologyKeyType": "Label"}], f'{P}[0].topologyKey is invalid: ""'),
    ([zone(topologyKey="")], f'{P}[0].topologyKey is invalid: ""'),
    ([zone(topologyKey="Example.com/zone")], f'{P}[0].topologyKey is invalid: "Example.com/zone"'),
    ([zone(topologyKey="zone-")], f'{P}[0].topologyKey is invalid: "zone-"'),
    ([zone(topologyKey="a" * 317)], f'{P}[0].topologyKey is invalid: "{"a" * 317}"'),
    ([zone(topologyKey=5)], f"{P}[0].topologyKey is invalid: 5"),
    ([{"topologyKey": "zone"}], f'{P}[0].topologyKeyType must be Label or Claim: ""'),
    ([zone(topologyKeyType="Zone")], f'{P}[0].topologyKeyType must be Label or Claim: "Zone"'),
    ([zone(topologyKeyType="label")], f'{P}[0].topologyKeyType must be Label or Claim: "label"'),
    ([zone(maxSkew=0)], f"{P}[0].maxSkew must be at least 1: 0"),
    ([zone(maxSkew=-1)], f"{P}[0].maxSkew must be at least 1: -1"),
    ([zone(maxSkew=1.5)], f"{P}[0].maxSkew must be at least 1: 1.5"),
    ([zone(maxSkew=True)], f"{P}[0].maxSkew must be at least 1: true"),
    ([zone(maxSkew="2")], f'{P}[0].maxSkew must be at least 1: "2"'),
    ([zone(maxSkew=2**31)], f"{P}[0].maxSkew must be at most 2147483647: 2147483648"),
    ([zone(maxSkew=2**63 - 1)], f"{P}[0].maxSkew must be at most 2147483647: 9223372036854775807"),
    ([zone(whenUnsatisfiable="Never")], f'{P}[0].whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway: "Never"'),
    ([zone(whenUnsatisfiable="")], f'{P}[0].whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway: ""'),
    # field order within a term, then term order
    ([{"topologyKey": "-", "topologyKeyType": "Zone", "maxSkew": 0}], f'{P}[0].topologyKey is invalid: "-"'),
    ([zone(topologyKeyType="Zone", maxSkew=0)], f'{P}[0].topologyKeyType must be Label or Claim: "Zone"'),
    ([zone(maxSkew=0, whenUnsatisfiable="x")], f"{P}[0].maxSkew must be at least 1: 0"),
    ([zone(), zone(topologyKeyType="Zone"), zone(maxSkew=0)], f'{P}[1].topologyKeyType must be Label or Claim: "Zone"'),
    (["zone"], f'{P}[0].topologyKey is invalid: ""'),
]


@pytest.mark.parametrize(("terms", "message"), INVALID, ids=[f"{i}" for i in range(len(INVALID))])
def test_invalid_terms_are_misconfigured(terms: list[Any], message: str) -> None:
    result = run(one_set_world(*ZONES), a_placement(spread(*terms)))
    assert condition(result, MISCONFIGURED) == ("True", "Misconfigured", message)
    assert decided(result) == []
    assert result.scores == result.passing_scores == {}
    assert condition(result, SATISFIED)[1] == "NoManagedClusterMatched"
    assert [(g.index, g.name, g.clusters) for g in result.groups] == [(0, "", ())]
    assert [(p.name, p.clusters) for p in result.pages] == [("placement1-decision-1", ())]


def test_constraints_that_are_not_a_list_are_misconfigured() -> None:
    result = run(one_set_world(*ZONES), a_placement({"spreadPolicy": {"spreadConstraints": "zone"}}))
    assert condition(result, MISCONFIGURED)[2] == 'Spread:spreadConstraints must be a list: "zone"'


BAD_TERM = zone(maxSkew=0)
ORDER = [
    # validation runs with no candidate left
    (
        {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"zone": "none"}}}}]},
        "Spread:spreadConstraints[0].maxSkew must be at least 1: 0",
    ),
    # after the Predicate check
    (
        {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"zone": "no way"}}}}]},
        "Predicate:",
    ),
    # after the TaintToleration check (which runs when candidates remain)
    ({"tolerations": [{"key": "", "operator": "Equal"}]}, "TaintToleration:"),
    # before the prioritizer weights and numberOfClusters
    ({"prioritizerPolicy": {"mode": "Weird"}}, "Spread:"),
    ({"numberOfClusters": -1}, "Spread:"),
]


@pytest.mark.parametrize(("spec", "prefix"), ORDER, ids=["no-candidates", "predicate", "taint", "weights", "noc"])
def test_spread_check_place_in_the_pipeline(spec: dict[str, Any], prefix: str) -> None:
    result = run(one_set_world(*ZONES), a_placement(spread(BAD_TERM, **spec)))
    assert condition(result, MISCONFIGURED)[0] == "True"
    assert condition(result, MISCONFIGURED)[2].startswith(prefix)


def test_repeated_term_splits_nothing_further() -> None:
    world = one_set_world(*ZONES, a_cluster("a3").with_labels(zone="a"))
    hard = zone(whenUnsatisfiable="DoNotSchedule")
    once = run(world, a_placement(spread(hard, numberOfClusters=4)))
    twice = run(world, a_placement(spread(hard, hard, numberOfClusters=4)))
    assert outcome(once) == outcome(twice)
    assert decided(twice) == ["a1", "a2", "b1", "b2"]


# --- the Spread prioritizer's weight -------------------------------------------------------------------------------
WEIGHTS = [
    (spread(zone()), [("Balance", 1), ("Steady", 1), ("Spread", 2)]),
    (
        spread(zone(), prioritizerPolicy={"configurations": [builtin("Spread", 5)]}),
        [("Balance", 1), ("Steady", 1), ("Spread", 5)],
    ),
    (
        spread(zone(), prioritizerPolicy={"configurations": [builtin("ResourceAllocatableCPU"), builtin("Spread", 3)]}),
        [("Balance", 1), ("Steady", 1), ("Spread", 3), ("ResourceAllocatableCPU", 1)],
    ),
    (
        {"prioritizerPolicy": {"configurations": [builtin("ResourceAllocatableCPU"), builtin("Spread")]}},
        [("Balance", 1), ("Steady", 1), ("ResourceAllocatableCPU", 1), ("Spread", 1)],
    ),
    (spread(zone(), prioritizerPolicy={"mode": "Exact"}), []),
    (spread(zone(), prioritizerPolicy={"mode": "Exact", "configurations": [builtin("Spread", -2)]}), [("Spread", -2)]),
    (spread(zone(), prioritizerPolicy={"configurations": [builtin("Spread", 0)]}), [("Balance", 1), ("Steady", 1)]),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    WEIGHTS,
    ids=["default", "configured", "keeps-position", "no-terms-configured", "exact", "exact-configured", "zero"],
)
def test_spread_weight(spec: dict[str, Any], expected: list[tuple[str, int]]) -> None:
    result = run(one_set_world(*ZONES), a_placement(spec))
    assert condition(result, MISCONFIGURED)[0] == "False"
    assert weights(result) == expected


@pytest.mark.parametrize(
    "spec",
    [
        {"prioritizerPolicy": {"configurations": [builtin("Spread", 3)]}},
        {"prioritizerPolicy": {"mode": "Exact", "configurations": [builtin("Spread", -1)]}},
    ],
    ids=["additive", "exact-negative"],
)
def test_spread_without_terms_scores_zero(spec: dict[str, Any]) -> None:
    world = one_set_world(*ZONES)
    result = run(world, a_placement({"numberOfClusters": 2, **spec}))
    spread_scores = next(p.scores for p in result.prioritizers if p.name == "Spread")
    assert spread_scores == dict.fromkeys(["a1", "a2", "b1", "b2"], 0)
    assert decided(result) == ["a1", "a2"]


@pytest.mark.parametrize(
    "spec",
    [
        {"prioritizerPolicy": {"mode": "Exact"}},
        {"prioritizerPolicy": {"configurations": [builtin("Spread", 0)]}},
    ],
    ids=["exact-without-spread", "weight-zero"],
)
def test_soft_terms_without_weight_have_no_effect(spec: dict[str, Any]) -> None:
    world = one_set_world(*ZONES)
    soft = run(world, a_placement(spread(zone(), numberOfClusters=2, **spec)))
    plain = run(world, a_placement({"numberOfClusters": 2, **spec}))
    assert outcome(soft) == outcome(plain)
    assert decided(soft) == ["a1", "a2"]
