"""Narrowed re-decision: a cluster or taint change that keeps set membership re-decides only the placements for
which the cluster's candidacy (predicates, then taints) or its scoring inputs can differ, that use CEL, or are
explained; a placement that holds the cluster and keeps passing it is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core import EngineSettings
from engine.inventory import Inventory, InventoryChange
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, one_set_world
from tests.engine.drivers.cluster import SET_LABEL, Driver
from topics.inventory import ClusterTaintsUpdated, ManagedCluster, Taint

PLACEMENTS: dict[str, dict[str, Any]] = {
    "all": {},
    "prod": {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]},
    "dev": {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "dev"}}}}]},
    "us": {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["us"]}]}
                }
            }
        ]
    },
    "cel": {
        "predicates": [
            {"requiredClusterSelector": {"celSelector": {"celExpressions": ['managedCluster.metadata.name != "x"']}}}
        ]
    },
    "tolerant": {"tolerations": [{"key": "k", "operator": "Exists"}]},
    "for-a-while": {"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 60}]},
    "cpu": {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}]}},
    # both pick "a" alone (equal scores, name order): b and c are candidates they do not hold
    "first": {
        "numberOfClusters": 1,
        "prioritizerPolicy": {"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}]},
    },
    "first-by-cpu": {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}],
        },
    },
}


def _driver(settings: EngineSettings | None = None) -> Driver:
    world = one_set_world(
        a_cluster("a").with_labels(env="prod"),
        a_cluster("b").with_labels(env="dev"),
        a_cluster("c").with_labels(env="dev").with_claims(region="eu"),
    )
    driver = Driver(world, settings=settings or EngineSettings())
    for name, spec in PLACEMENTS.items():
        driver.apply(a_placement(spec, name=name))
    return driver


def _relabel(name: str, claims: dict[str, str] | None = None, **labels: str) -> Any:
    def change(inventory: Inventory) -> list[InventoryChange]:
        cluster = ManagedCluster.model_validate(
            {
                "metadata": {"name": name, "labels": {SET_LABEL: "set1", **labels}},
                "status": {"clusterClaims": [{"name": k, "value": v} for k, v in (claims or {}).items()]},
            }
        )
        return inventory.apply(cluster, NOW)

    return change


def _taint(name: str, effect: str = "NoSelect") -> Any:
    return lambda inv: inv.apply(ClusterTaintsUpdated(cluster=name, taints=[Taint(key="k", effect=effect)]), NOW)


def _allocatable(name: str, cpu: str) -> Any:
    def change(inventory: Inventory) -> list[InventoryChange]:
        cluster = ManagedCluster.model_validate(
            {
                "metadata": {"name": name, "labels": {SET_LABEL: "set1", "env": "dev"}},
                "status": {"allocatable": {"cpu": cpu}, "capacity": {"cpu": "64"}},
            }
        )
        return inventory.apply(cluster, NOW)

    return change


def keys(*names: str) -> list[str]:
    return [f"Placement/ns1/{n}" for n in sorted(names)]


EVERYONE = ("all", "tolerant", "for-a-while", "cpu", "first", "first-by-cpu")
"""The placements without predicates: every cluster of the set is their candidate."""

CASES = [
    # b leaves "dev" for "test": dev loses it; the others pass it before and after, so their answer stands
    (_relabel("b", env="test"), keys("cel", "dev")),
    # b becomes prod: dev loses it, prod gains it
    (_relabel("b", env="prod"), keys("cel", "dev", "prod")),
    # a gains the us claim: us can now see it; prod keeps passing it
    (_relabel("a", {"region": "us"}, env="prod"), keys("cel", "us")),
    # a NoSelect taint on c: placements that held c and do not tolerate it, and the one whose toleration expires;
    # first and first-by-cpu did not hold c, and c reports no CPU, so it moves no CPU score: unchanged
    (_taint("c"), keys("all", "cel", "cpu", "dev", "for-a-while")),
    # a PreferNoSelect taint filters nothing and starts no toleration clock; CEL does not read the taints topic
    (_taint("c", "PreferNoSelect"), keys()),
    # c's allocatable CPU changes: a scoring input, so every placement that passes it
    (_allocatable("c", "8"), keys(*EVERYONE, "cel", "dev")),
    # b moves to another set: membership changed, so every placement the sets reach (spec L2)
    (
        lambda inv: inv.apply(
            ManagedCluster.model_validate({"metadata": {"name": "b", "labels": {SET_LABEL: "set2"}}}), NOW
        ),
        keys(*PLACEMENTS),
    ),
]
IDS = ["label-left", "label-joined", "claim-joined", "taint", "prefer-taint", "allocatable", "set-moved"]


@pytest.mark.parametrize(("change", "expected"), CASES, ids=IDS)
def test_cluster_change_re_decides_only_placements_whose_answer_can_move(change: Any, expected: list[str]) -> None:
    driver = _driver()
    assert driver.change(change(driver.inventory)) == expected


def test_the_placements_that_pick_one_cluster_hold_a() -> None:
    driver = _driver()
    for name in ("first", "first-by-cpu"):
        assert driver.states[keys(name)[0]].current() == {"a"}


def test_explained_placements_are_always_re_decided() -> None:
    driver = _driver(EngineSettings(explain=frozenset(keys("us"))))
    assert driver.change(_relabel("b", env="test")(driver.inventory)) == keys("cel", "dev", "us")


@pytest.mark.parametrize("change", [case[0] for case in CASES], ids=IDS)
def test_skipped_placements_would_have_decided_the_same(change: Any) -> None:
    """The narrowing is safe: re-deciding everything after the change publishes nothing more."""
    driver = _driver()
    driver.change(change(driver.inventory))
    published = len(driver.published)
    for key in keys(*PLACEMENTS):
        driver.decide(key)
    assert len(driver.published) == published


# --- a candidate that leaves: only the ends of a normalised range and expired AddOn scores matter ---------------
RANGE_PLACEMENTS: dict[str, dict[str, Any]] = {
    "top-cpu": {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}],
        },
    },
    "bottom-cpu": {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": -1}],
        },
    },
    "addon": {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "load", "scoreName": "free"}}}
            ],
        },
    },
}


def _range_driver() -> Driver:
    """CPU 64 (a), 16 (b, c), 4 (d, e): top-cpu holds a, bottom-cpu holds d; addon holds a, b's score expired."""
    cpu = {"a": "64", "b": "16", "c": "16", "d": "4", "e": "4"}
    world = one_set_world(*(a_cluster(name).with_resources({"cpu": value}) for name, value in cpu.items()))
    world.with_score("a", "load", {"free": 50}).with_score("b", "load", {"free": 90}, "2021-12-31T00:00:00Z")
    driver = Driver(world)
    for name, spec in RANGE_PLACEMENTS.items():
        driver.apply(a_placement(spec, name=name))
    return driver


RANGE_CASES = [
    # b sits inside the CPU range; its expired score is named in addon's Warning
    (["b"], [keys("addon")]),
    # c is inside the range and has no score
    (["c"], [keys()]),
    # d leaves the low end, but e is still there: only its holder
    (["d"], [keys("bottom-cpu")]),
    # then e, the last at the low end, leaves: every CPU score moves
    (["d", "e"], [keys("bottom-cpu"), keys("bottom-cpu", "top-cpu")]),
    # a is alone at the high end, and held by top-cpu and addon
    (["a"], [keys("addon", "bottom-cpu", "top-cpu")]),
]


@pytest.mark.parametrize(("tainted", "expected"), RANGE_CASES, ids=["b", "c", "d", "d-then-e", "a"])
def test_a_leaving_candidate_re_decides_only_where_it_moves_the_others(
    tainted: list[str], expected: list[list[str]]
) -> None:
    driver = _range_driver()
    assert driver.states[keys("top-cpu")[0]].current() == {"a"}
    assert driver.states[keys("bottom-cpu")[0]].current() == {"d"}
    steps = [driver.change(_taint(name)(driver.inventory)) for name in tainted]
    assert steps == expected
    published = len(driver.published)
    for key in keys(*RANGE_PLACEMENTS):  # the narrowing is safe: re-deciding everything publishes nothing more
        driver.decide(key)
    assert len(driver.published) == published
