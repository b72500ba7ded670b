"""Narrowed re-decision: a cluster or taint change that keeps set membership re-decides only the placements whose
predicates may pass the cluster (as it was or is), hold it in their decision, use CEL, or are explained."""

from __future__ import annotations

from typing import Any

import pytest
from cluster_builders import NOW, a_cluster, a_placement, one_set_world
from test_cluster_engine import SET_LABEL, Driver

from engine.core import EngineSettings
from engine.inventory import Inventory, InventoryChange
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


def _taint(name: str) -> Any:
    return lambda inv: inv.apply(ClusterTaintsUpdated(cluster=name, taints=[Taint(key="k", effect="NoSelect")]), NOW)


def keys(*names: str) -> list[str]:
    return [f"Placement/ns1/{n}" for n in sorted(names)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # b leaves "dev" for "test": dev held it, prod and us never could see it
        (_relabel("b", env="test"), keys("all", "cel", "dev")),
        # b becomes prod: prod can now see it
        (_relabel("b", env="prod"), keys("all", "cel", "dev", "prod")),
        # a gains the us claim: us can now see it; prod holds it
        (_relabel("a", {"region": "us"}, env="prod"), keys("all", "cel", "prod", "us")),
        # a taint on c: only the placements whose predicates pass c
        (_taint("c"), keys("all", "cel", "dev")),
        # b moves to another set: membership changed, so every placement the sets reach (spec L2)
        (
            lambda inv: inv.apply(
                ManagedCluster.model_validate({"metadata": {"name": "b", "labels": {SET_LABEL: "set2"}}}), NOW
            ),
            keys(*PLACEMENTS),
        ),
    ],
    ids=["label-left", "label-joined", "claim-joined", "taint", "set-moved"],
)
def test_cluster_change_re_decides_only_placements_that_can_see_the_cluster(change: Any, expected: list[str]) -> None:
    driver = _driver()
    assert driver.change(change(driver.inventory)) == expected


def test_explained_placements_are_always_re_decided() -> None:
    driver = _driver(EngineSettings(explain=frozenset(keys("us"))))
    assert driver.change(_relabel("b", env="test")(driver.inventory)) == keys("all", "cel", "dev", "us")


def test_skipped_placements_would_have_decided_the_same() -> None:
    """The narrowing is safe: re-deciding everything after the change publishes nothing more."""
    driver = _driver()
    driver.change(_relabel("b", env="test")(driver.inventory))
    published = len(driver.published)
    for key in keys(*PLACEMENTS):
        driver.decide(key)
    assert len(driver.published) == published
