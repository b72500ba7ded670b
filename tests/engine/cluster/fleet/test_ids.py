"""Fleet ids: name order, unknown names left out, arrays over the fleet; views share a fleet while no cluster
comes or goes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.cluster.fleet.ids import Fleet
from engine.cluster.fleet.views import CLUSTERSET_LABEL, InventoryView
from tests.engine.cluster.cluster_builders import NOW, a_cluster, one_set_world
from topics.inventory import ManagedCluster

FLEET = Fleet(["c10", "c2", "a", "b"])  # ids by name: a=0, b=1, c10=2, c2=3


@pytest.mark.parametrize(
    ("names", "ids"),
    [
        ([], []),
        (["c2"], [3]),
        (["c2", "a", "c10"], [0, 2, 3]),
        (["gone", "b", "also-gone"], [1]),
        (frozenset({"c2", "b"}), [1, 3]),
        (frozenset({"gone"}), []),
    ],
    ids=["none", "one", "sorted-by-name", "unknown-left-out", "frozenset", "only-unknown"],
)
def test_fleet_ids(names: list[str] | frozenset[str], ids: list[int]) -> None:
    assert FLEET.ids(names).tolist() == ids
    assert FLEET.names_of(FLEET.ids(names)) == sorted(set(names) & set(FLEET.names))


def test_fleet_ids_of_each_frozenset_are_its_own() -> None:
    """Sets asked for again and in any order each get their own ids, in a read-only array (callers keep them)."""
    fleet = Fleet(["a", "b", "c", "d"])
    sets = [frozenset(pair) for pair in (("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "c"), ("b", "d"))]
    for _ in range(2):
        for names in [*sets, *reversed(sets)]:
            assert fleet.ids(names).tolist() == sorted(map(fleet.position.__getitem__, names))
    with pytest.raises(ValueError, match="read-only"):
        fleet.ids(sets[0])[0] = 2


def test_fleet_mask_values_and_names() -> None:
    assert FLEET.mask(["b", "gone", "c2"]).tolist() == [False, True, False, True]
    assert FLEET.marked(FLEET.ids(["b", "c2"])).tolist() == [False, True, False, True]
    values = FLEET.values({"c10": 2.5, "gone": 1.0, "a": 0.0})
    assert [None if math.isnan(v) else v for v in values.tolist()] == [0.0, None, 2.5, None]
    assert FLEET.names_of(np.array([3, 0, 2])) == ["c2", "a", "c10"]
    assert len(FLEET) == 4


def _relabelled(name: str, *, set_name: str = "set1") -> ManagedCluster:
    labels = {"env": "new", CLUSTERSET_LABEL: set_name}
    return ManagedCluster.model_validate({"metadata": {"name": name, "labels": labels}})


def test_views_share_a_fleet_until_a_cluster_comes_or_goes() -> None:
    inventory = one_set_world(a_cluster("c1"), a_cluster("c2")).inventory(NOW)
    first = InventoryView(inventory)
    fleet = first.fleet()
    inventory.apply(_relabelled("c1"), NOW)
    relabelled = InventoryView(inventory, previous=first)
    assert relabelled.fleet() is fleet
    inventory.apply(_relabelled("c0", set_name="elsewhere"), NOW)
    grown = InventoryView(inventory, previous=relabelled)
    assert grown.fleet() is not fleet
    assert grown.fleet().names == ("c0", "c1", "c2")
    assert grown.available_ids(("set1",)).tolist() == [1, 2]  # c0 is in no set
