"""ClusterPlacementEngine: what makes a placement decided again: timers, resync, score expiry, inventory changes
through the indexes, and the Balance counts of other placements."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.core import EngineSettings
from engine.inventory import ObjectKey
from tests.engine.cluster.cluster_builders import NOW, World, a_cluster, a_placement, a_world, one_set_world
from tests.engine.drivers.cluster import SET_LABEL, THREE, Driver, clusters, data, key_of, score_of
from topics.inventory import ClusterTaintsUpdated, ManagedCluster, Taint


def test_cluster_engine_timers_and_resync() -> None:
    world = one_set_world(
        a_cluster("c1").with_taint("k", effect="NoSelect", time_added="2021-12-31T23:59:00Z"), a_cluster("c2")
    )
    driver = Driver(world)
    placement = a_placement({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 120}]})
    key = key_of(placement)
    assert clusters(data(driver.apply(placement)[0])) == ["c1", "c2"]
    due = driver.engine.next_due(driver.states[key])
    assert due == NOW + timedelta(seconds=60)
    driver.now = due
    emits = driver.timer(key)
    assert clusters(data(emits[0])) == ["c2"]
    assert driver.engine.next_due(driver.states[key]) == due + timedelta(seconds=600)
    driver.settings = EngineSettings(resync_seconds=0)
    driver.timer(key)
    assert driver.engine.next_due(driver.states[key]) is None


def test_cluster_engine_score_expiry_timer() -> None:
    world = one_set_world(a_cluster("c1"), a_cluster("c2"))
    world.with_score("c1", "res", {"s": 50}, valid_until="2022-01-01T00:00:30Z")
    driver = Driver(world, settings=EngineSettings(resync_seconds=0))
    spec = {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "res", "scoreName": "s"}}}
            ],
        },
    }
    placement = a_placement(spec)
    key = key_of(placement)
    assert clusters(data(driver.apply(placement)[0])) == ["c1"]
    assert driver.engine.next_due(driver.states[key]) == NOW + timedelta(seconds=31)
    driver.now = NOW + timedelta(seconds=31)
    event = data(driver.timer(key)[0])
    assert event.warning == {"plugin": "AddOn/res/s", "message": "AddOnPlacementScores c1/res expired"}


def _indexed_world() -> World:
    world = a_world().with_set("set1").with_set("set2")
    world.with_set("prod", {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"env": "prod"}}})
    world.with_clusters(a_cluster("a").in_set("set1"), a_cluster("b").in_set("set2").with_labels(env="prod"))
    world.with_binding("ns1", "set1").with_binding("ns2", "set2").with_binding("ns3", "set1", "set2").with_binding(
        "ns4", "prod"
    )
    return world


def _indexed_driver() -> Driver:
    driver = Driver(_indexed_world())
    driver.apply(a_placement(name="p1", namespace="ns1"))
    driver.apply(a_placement(name="p2", namespace="ns2"))
    driver.apply(a_placement({"clusterSets": ["set2"]}, name="p3", namespace="ns3"))
    driver.apply(a_placement(name="p0", namespace="ns3"))
    driver.apply(a_placement(name="p4", namespace="ns4"))
    cel = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "celSelector": {"celExpressions": ['managedCluster.scores("cpu").size() >= 0']}
                }
            }
        ]
    }
    driver.apply(a_placement(cel, name="p5", namespace="ns3"))
    addon = {
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "mem", "scoreName": "s"}}}
            ]
        }
    }
    driver.apply(a_placement(addon, name="p6", namespace="ns2"))
    return driver


def _cluster(name: str, **labels: str) -> ManagedCluster:
    return ManagedCluster.model_validate({"metadata": {"name": name, "labels": labels}})


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda inv: inv.apply(_cluster("new", **{SET_LABEL: "set1"}), NOW),
            ["Placement/ns1/p1", "Placement/ns3/p0", "Placement/ns3/p5"],
        ),
        (
            lambda inv: inv.apply(_cluster("a", **{SET_LABEL: "set2"}), NOW),
            [
                "Placement/ns1/p1",
                "Placement/ns2/p2",
                "Placement/ns2/p6",
                "Placement/ns3/p0",
                "Placement/ns3/p3",
                "Placement/ns3/p5",
            ],
        ),
        (
            lambda inv: inv.apply(_cluster("b", env="prod"), NOW),
            [
                "Placement/ns2/p2",
                "Placement/ns2/p6",
                "Placement/ns3/p0",
                "Placement/ns3/p3",
                "Placement/ns3/p5",
                "Placement/ns4/p4",
            ],
        ),
        (
            lambda inv: inv.delete(ObjectKey("ManagedCluster", "", "a"), NOW),
            ["Placement/ns1/p1", "Placement/ns3/p0", "Placement/ns3/p5"],
        ),
        (
            # p5 does not hold a (no "cpu" score object: a runtime error, no match, C15), and Balance and Steady
            # scores do not move when a candidate leaves
            lambda inv: inv.apply(ClusterTaintsUpdated(cluster="a", taints=[Taint(key="k", effect="NoSelect")]), NOW),
            ["Placement/ns1/p1", "Placement/ns3/p0"],
        ),
        (
            lambda inv: inv.delete(ObjectKey("ManagedClusterSetBinding", "ns3", "set2"), NOW),
            ["Placement/ns3/p0", "Placement/ns3/p3", "Placement/ns3/p5"],
        ),
        (
            lambda inv: inv.delete(ObjectKey("ManagedClusterSet", "", "set1"), NOW),
            ["Placement/ns1/p1", "Placement/ns3/p0", "Placement/ns3/p5"],
        ),
        (lambda inv: inv.apply(score_of("a", "cpu", 1), NOW), ["Placement/ns3/p5"]),
        (lambda inv: inv.apply(score_of("b", "mem", 1), NOW), ["Placement/ns2/p6"]),
        (lambda inv: inv.apply(score_of("b", "other", 1), NOW), []),
    ],
    ids=[
        "cluster-added",
        "cluster-moved-sets",
        "label-selector-set",
        "cluster-deleted",
        "taints",
        "binding",
        "set",
        "cel-scores-literal",
        "addon-resource",
        "unused-score",
    ],
)
def test_cluster_engine_affected_by_is_index_driven(change: Any, expected: list[str]) -> None:
    driver = _indexed_driver()
    changes = change(driver.inventory)
    assert changes
    assert driver.change(changes) == expected


def test_cluster_engine_non_literal_scores_call_matches_every_score() -> None:
    driver = _indexed_driver()
    expr = "managedCluster.scores(managedCluster.metadata.name).size() >= 0"
    cel = {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expr]}}}]}
    driver.apply(a_placement(cel, name="p7", namespace="ns1"))
    assert driver.change(driver.inventory.apply(score_of("a", "anything", 1), NOW)) == ["Placement/ns1/p7"]


def test_cluster_engine_balance_counts_other_placements() -> None:
    driver = Driver(one_set_world(*THREE))
    for index in range(3):
        emits = driver.apply(a_placement({"numberOfClusters": 1}, name=f"p{index}"))
        assert clusters(data(emits[0])) == [f"c{index + 1}"]
    # Deleting p0 frees c1; a new placement now prefers it.
    driver._commit("Placement/ns1/p0", None, ())
    assert clusters(data(driver.apply(a_placement({"numberOfClusters": 1}, name="p9"))[0])) == ["c1"]
    others = driver.engine.others("Placement/ns1/p9")
    assert [others.count(c) for c in ("c1", "c2", "c3")] == [0, 1, 1]
    assert others.max_count() == 1
