"""Cluster sets, bindings and available clusters (spec C1–C5, J2 rules 1–3)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.fleet.views import EvaluationError
from engine.cluster.pipeline.conditions import SATISFIED
from tests.engine.cluster.cluster_builders import a_cluster, a_placement, a_world, condition, decided, run


def _world() -> Any:
    return (
        a_world()
        .with_clusters(
            a_cluster("a1").in_set("setA").with_labels(env="prod"),
            a_cluster("a2").in_set("setA"),
            a_cluster("b1").in_set("setB").with_labels(env="prod"),
            a_cluster("gone").in_set("setA").being_deleted(),
            a_cluster("loose").with_labels(env="prod"),
        )
        .with_set("setA")
        .with_set("setB")
        .with_set("prodSet", {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"env": "prod"}}})
        .with_set("allSet", {"selectorType": "LabelSelector", "labelSelector": {}})
        .with_set("noneSet", {"selectorType": "LabelSelector"})
        .with_set("emptySet")
    )


@pytest.mark.parametrize(
    ("bindings", "cluster_sets", "expected", "eligible"),
    [
        (["setA"], [], ["a1", "a2"], ["setA"]),
        (["setA", "setB"], [], ["a1", "a2", "b1"], ["setA", "setB"]),
        (["setA", "setB"], ["setB"], ["b1"], ["setB"]),
        (["setB", "setA"], ["setA", "setB", "setC"], ["a1", "a2", "b1"], ["setA", "setB"]),
        (["prodSet"], [], ["a1", "b1", "loose"], ["prodSet"]),
        (["prodSet", "setA"], [], ["a1", "a2", "b1", "loose"], ["prodSet", "setA"]),
        (["allSet"], [], ["a1", "a2", "b1", "loose"], ["allSet"]),
        (["noneSet"], [], [], ["noneSet"]),
        (["missingSet", "setB"], [], ["b1"], ["setB"]),
    ],
    ids=[
        "exclusive",
        "union",
        "clusterSets-filter",
        "sorted-intersection",
        "label-selector",
        "dedup",
        "empty-selector-all",
        "missing-selector-none",
        "binding-to-missing-set",
    ],
)
def test_cluster_sets_and_bindings(
    bindings: list[str], cluster_sets: list[str], expected: list[str], eligible: list[str]
) -> None:
    world = _world().with_binding("ns1", *bindings)
    result = run(world, a_placement({"clusterSets": cluster_sets}))
    assert decided(result) == expected
    assert list(result.eligible_sets) == eligible


@pytest.mark.parametrize(
    ("bindings", "cluster_sets", "reason", "message"),
    [
        (
            {"ns2": ["setA"]},
            [],
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        ),
        (
            {"ns1": ["missing"]},
            [],
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        ),
        (
            {"ns1": ["setA"]},
            ["setB", "setC"],
            "NoIntersection",
            "None of ManagedClusterSets [setB,setC] is bound to placement namespace",
        ),
        (
            {"ns1": ["emptySet", "noneSet"]},
            [],
            "AllManagedClusterSetsEmpty",
            "All ManagedClusterSets [emptySet,noneSet] have no member ManagedCluster",
        ),
    ],
)
def test_cluster_satisfied_set_rules(
    bindings: dict[str, list[str]], cluster_sets: list[str], reason: str, message: str
) -> None:
    world = _world()
    for namespace, names in bindings.items():
        world.with_binding(namespace, *names)
    result = run(world, a_placement({"clusterSets": cluster_sets}))
    assert condition(result, SATISFIED) == ("False", reason, message)
    assert decided(result) == []
    assert len(result.pages) == 1


def test_cluster_prioritizer_misconfiguration_reported_without_clusters() -> None:
    spec = {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Nope"}}]}}
    result = run(a_world(), a_placement(spec))
    assert condition(result, SATISFIED)[1] == "NoManagedClusterSetBindings"
    assert result.status.message == "incorrect builtin prioritizer: Nope"


def test_cluster_unknown_selector_type_fails_the_evaluation() -> None:
    world = _world().with_set("odd", {"selectorType": "Weird"}).with_binding("ns1", "odd")
    with pytest.raises(EvaluationError):
        run(world, a_placement())
