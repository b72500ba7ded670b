"""Re-decision with spread: a topology label or claim change of a candidate re-decides exactly the placements whose
spread it can move (the whole selection is recomputed), and no others; a Placement update re-plans the weights."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core import EngineSettings
from engine.inventory import Inventory, InventoryChange
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, one_set_world
from tests.engine.cluster.pipeline.spread.test_terms import builtin, spread, zone
from tests.engine.drivers.cluster import SET_LABEL, Driver, clusters, data
from topics.inventory import ClusterTaintsUpdated, ManagedCluster, Taint

HARD = zone(whenUnsatisfiable="DoNotSchedule")
PROD = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]
# Balance is off: other placements' decisions move it without triggering anything (as upstream), which would
# blur what a topology change re-decides
NO_BALANCE = {"prioritizerPolicy": {"configurations": [builtin("Balance", 0)]}}
PLACEMENTS: dict[str, dict[str, Any]] = {
    "plain": {"numberOfClusters": 2, **NO_BALANCE},
    "hard": spread(HARD, numberOfClusters=2, **NO_BALANCE),
    "soft": spread(zone(), numberOfClusters=2, **NO_BALANCE),
    # Exact without a Spread weight: a soft term has no effect at all
    "soft-unweighted": spread(zone(), numberOfClusters=2, prioritizerPolicy={"mode": "Exact"}),
    # its candidates are the prod clusters only
    "prod-hard": spread(HARD, predicates=PROD, **NO_BALANCE),
    "claim": spread(zone(topologyKeyType="Claim", whenUnsatisfiable="DoNotSchedule"), **NO_BALANCE),
    "region-then-zone": spread({"topologyKey": "region", "topologyKeyType": "Label"}, HARD, **NO_BALANCE),
}


def _driver(settings: EngineSettings | None = None, names: tuple[str, ...] = tuple(PLACEMENTS)) -> Driver:
    world = one_set_world(
        a_cluster("a1").with_labels(region="r", zone="a", env="prod"),
        a_cluster("a2").with_labels(region="r", zone="a"),
        a_cluster("b1").with_labels(region="r", zone="b"),
        a_cluster("b2").with_labels(region="r", zone="b"),
        a_cluster("d1").with_labels(env="dev"),  # no zone: filtered by the hard terms
    )
    driver = Driver(world, settings=settings or EngineSettings())
    for name in names:
        driver.apply(a_placement(PLACEMENTS[name], name=name))
    return driver


def _relabel(name: str, claims: dict[str, str] | None = None, **labels: str) -> Any:
    def change(inventory: Inventory) -> list[InventoryChange]:
        current = inventory.cluster(name)
        assert current is not None
        cluster = ManagedCluster.model_validate(
            {
                "metadata": {"name": name, "labels": {SET_LABEL: "set1", **current.metadata.labels, **labels}},
                "status": {"clusterClaims": [{"name": k, "value": v} for k, v in (claims or {}).items()]},
            }
        )
        return inventory.apply(cluster, NOW)

    return change


def _taint(name: str) -> Any:
    return lambda inv: inv.apply(ClusterTaintsUpdated(cluster=name, taints=[Taint(key="k", effect="NoSelect")]), NOW)


def keys(*names: str) -> list[str]:
    return [f"Placement/ns1/{n}" for n in sorted(names)]


SPREADING = ("hard", "soft", "region-then-zone")
CASES = [
    # b1 moves to zone a: every placement whose topologies read the zone label of a candidate
    (_relabel("b1", zone="a"), keys(*SPREADING)),
    # a label no term reads: nobody
    (_relabel("b1", tier="gold"), keys()),
    # d1 gains a zone: it joins the hard placement's topologies (not region-then-zone's: it has no region); the
    # soft one already had it as a candidate, and now in a topology
    (_relabel("d1", zone="b"), keys("hard", "soft")),
    # a2 is no prod cluster: its zone does not matter to prod-hard
    (_relabel("a2", zone="b"), keys(*SPREADING)),
    # a1 is prod: its zone matters to prod-hard too
    (_relabel("a1", zone="b"), keys(*SPREADING, "prod-hard")),
    # a claim named like the label key matters only to the claim term
    (_relabel("b1", {"zone": "x"}), keys("claim")),
    # b2 leaves the candidates and its place in the topologies; plain and soft-unweighted do not hold it, and the
    # claim placement has no candidate at all (no cluster has the claim)
    (_taint("b2"), keys(*SPREADING)),
]
IDS = ["zone-moved", "other-label", "zone-added", "non-candidate-zone", "candidate-zone", "claim", "tainted"]


@pytest.mark.parametrize(("change", "expected"), CASES, ids=IDS)
def test_topology_change_re_decides_exactly_the_spread_it_moves(change: Any, expected: list[str]) -> None:
    driver = _driver()
    assert driver.change(change(driver.inventory)) == expected


@pytest.mark.parametrize("change", [case[0] for case in CASES], ids=IDS)
def test_skipped_placements_would_have_decided_the_same(change: Any) -> None:
    """The narrowing is safe: re-deciding everything after the change publishes nothing more."""
    driver = _driver()
    driver.change(change(driver.inventory))
    published = len(driver.published)
    for key in keys(*PLACEMENTS):
        driver.decide(key)
    assert [k for k, _ in driver.published[published:]] == []


def test_a_moved_zone_moves_the_other_clusters_too() -> None:
    """The decision a1, b1 was made while b1 was in zone b; with b1 in zone a, b2 replaces it."""
    driver = _driver(names=("hard",))
    key = keys("hard")[0]
    assert driver.states[key].current() == {"a1", "b1"}
    before = len(driver.published)
    assert key in driver.change(_relabel("b1", zone="a")(driver.inventory))
    events = [data(emit) for k, emit in driver.published[before:] if k == key]
    assert clusters(events[-1]) == ["a1", "b2"]


def test_going_from_no_terms_to_terms_changes_the_default_weights() -> None:
    key = keys("p")[0]
    driver = _driver(EngineSettings(explain=frozenset({key})), names=())
    first = data(driver.apply(a_placement({"numberOfClusters": 2}, name="p"))[0])
    assert [(p["name"], p["weight"]) for p in first.prioritizers] == [("Balance", 1), ("Steady", 1)]
    assert clusters(first) == ["a1", "a2"]
    updated = driver.apply(a_placement(spread(zone(), numberOfClusters=2), name="p", generation=2))
    last = data(updated[-1])
    assert [(p["name"], p["weight"]) for p in last.prioritizers] == [("Balance", 1), ("Steady", 1), ("Spread", 2)]
    assert clusters(last) == ["a1", "b1"]  # Spread 2 outweighs Steady 1


def test_explained_pipeline_shows_the_spread_step_only_with_terms() -> None:
    from engine.cluster import explain_placement

    driver = _driver()
    with_terms = explain_placement(keys("hard")[0], driver.states[keys("hard")[0]], driver.ctx())
    without = explain_placement(keys("plain")[0], driver.states[keys("plain")[0]], driver.ctx())
    assert [step["name"] for step in with_terms["filteredPipelineResults"]] == [
        "Predicate",
        "Predicate,TaintToleration",
        "Predicate,TaintToleration,Spread",
    ]
    assert with_terms["filteredPipelineResults"][-1]["filteredClusters"] == ["a1", "a2", "b1", "b2"]
    assert with_terms["filteredBy"] == {"d1": "Spread"}
    assert [step["name"] for step in without["filteredPipelineResults"]] == ["Predicate", "Predicate,TaintToleration"]


def test_steady_weight_keeps_spread_placements_in_place_on_follow_up() -> None:
    """The follow-up evaluation after a changed decision gives the same answer: one event per change."""
    driver = _driver()
    before = len(driver.published)
    driver.apply(
        a_placement(
            spread(zone(), numberOfClusters=3, prioritizerPolicy={"configurations": [builtin("Steady")]}), name="q"
        )
    )
    assert len(driver.published) - before == 1
    assert driver.timer(keys("q")[0]) == []
