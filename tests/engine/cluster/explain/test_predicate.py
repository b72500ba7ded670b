"""Explain for the Predicate filter: per removed cluster and predicate, the failed label or claim requirement and
each CEL expression's outcome (true, false, error with its message, stopped at the cost limit)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster import ClusterPlacementEngine, PlacementState, explain_placement
from engine.cluster.explain.predicate import failed_requirement
from engine.cluster.matching import cel_env
from engine.cluster.matching.selectors import compile_selector
from engine.core import EngineContext
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, one_set_world
from topics.k8s import LabelSelectorRequirement

WORLD = (
    a_cluster("c1").with_labels(env="prod", version="1.20.0").with_claims(region="eu"),
    a_cluster("c2").with_labels(env="dev", version="1.18.0").with_claims(region="us"),
    a_cluster("c3").with_labels(version="bad"),
)


def _explain(spec: dict[str, Any], world: Any = None) -> dict[str, Any]:
    inventory = (world or one_set_world(*WORLD)).inventory()
    state = PlacementState(a_placement(spec))
    return explain_placement("Placement/ns1/placement1", state, EngineContext(now=NOW, inventory=inventory))


def _predicate(**selector: Any) -> dict[str, Any]:
    return {"requiredClusterSelector": selector}


@pytest.mark.parametrize(
    ("predicate", "details"),
    [
        (
            _predicate(celSelector={"celExpressions": ['managedCluster.metadata.labels.env == "prod"']}),
            {
                "c2": [
                    {
                        "celExpressions": [
                            {"expression": 'managedCluster.metadata.labels.env == "prod"', "outcome": "false"}
                        ]
                    }
                ],
                "c3": [
                    {
                        "celExpressions": [
                            {
                                "expression": 'managedCluster.metadata.labels.env == "prod"',
                                "outcome": "error",
                                "message": "no such member in mapping: 'env'",
                            }
                        ]
                    }
                ],
            },
        ),
        (
            _predicate(labelSelector={"matchLabels": {"env": "prod"}}),
            {
                "c2": [{"labelSelector": {"requirement": "env in (prod)", "value": "dev"}}],
                "c3": [{"labelSelector": {"requirement": "env in (prod)", "value": None}}],
            },
        ),
        (
            _predicate(claimSelector={"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us"]}]}),
            {"c2": [{"claimSelector": {"requirement": "region notin (us)", "value": "us"}}]},
        ),
    ],
    ids=["cel-false-and-error", "label", "claim"],
)
def test_cluster_explain_says_what_failed_in_each_predicate(predicate: dict[str, Any], details: dict[str, Any]) -> None:
    report = _explain({"predicates": [predicate]})
    assert report["predicateDetails"] == details


def test_cluster_explain_reports_every_expression_of_a_selector_with_its_outcome() -> None:
    expressions = [
        "semver(managedCluster.metadata.labels.version).isGreaterThan(semver('1.19.0'))",
        'managedCluster.scores("usage").size() > 0',
        "managedCluster.metadata.name",
    ]
    report = _explain({"predicates": [_predicate(celSelector={"celExpressions": expressions})]})
    outcomes = {
        cluster: [(e["outcome"], e.get("message", "")) for e in entries[0]["celExpressions"]]
        for cluster, entries in report["predicateDetails"].items()
    }
    assert outcomes["c1"][0] == ("true", "")
    assert outcomes["c2"][0] == ("false", "")
    assert outcomes["c3"][0] == ("error", "invalid semver: bad")
    assert outcomes["c1"][1] == ("error", "AddOnPlacementScore usage not found")
    assert outcomes["c1"][2] == ("error", "the result is a string, not a bool")


def test_cluster_explain_reports_a_stopped_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel_env, "EXPRESSION_LIMIT", 500)
    monkeypatch.setattr("engine.cluster.explain.predicate.EXPRESSION_LIMIT", 500)
    big = "[" + ",".join(["1"] * 30) + "]"
    runaway = f"{big}.all(a, {big}.all(b, a == b || true))"
    report = _explain({"predicates": [_predicate(celSelector={"celExpressions": [runaway]})]})
    assert report["predicateDetails"]["c1"] == [
        {"celExpressions": [{"expression": runaway, "outcome": "stopped", "message": "cost limit exceeded"}]}
    ]


def test_cluster_explain_lists_every_predicate_in_spec_order_for_each_removed_cluster() -> None:
    spec = {
        "predicates": [
            _predicate(labelSelector={"matchLabels": {"env": "prod"}}),
            _predicate(celSelector={"celExpressions": ['managedCluster.metadata.labels.version == "1.20.0"']}),
        ]
    }
    report = _explain(spec)
    assert sorted(report["predicateDetails"]) == ["c2", "c3"]
    assert report["predicateDetails"]["c2"] == [
        {"labelSelector": {"requirement": "env in (prod)", "value": "dev"}},
        {"celExpressions": [{"expression": 'managedCluster.metadata.labels.version == "1.20.0"', "outcome": "false"}]},
    ]


@pytest.mark.parametrize(
    "spec",
    [
        {},  # nothing removed
        {"predicates": [_predicate(celSelector={"celExpressions": ["invalid.expression"]})]},  # the status says why
    ],
    ids=["no-predicates", "misconfigured"],
)
def test_cluster_explain_has_no_predicate_details_when_nothing_explains(spec: dict[str, Any]) -> None:
    assert _explain(spec).get("predicateDetails", {}) == {}


def test_cluster_explain_of_a_running_engine_carries_predicate_details() -> None:
    inventory = one_set_world(*WORLD).inventory()
    state = PlacementState(a_placement({"predicates": [_predicate(labelSelector={"matchLabels": {"env": "prod"}})]}))
    report = ClusterPlacementEngine().explain(
        "Placement/ns1/placement1", state, EngineContext(now=NOW, inventory=inventory)
    )
    assert report["predicateDetails"]["c2"] == [{"labelSelector": {"requirement": "env in (prod)", "value": "dev"}}]


@pytest.mark.parametrize(
    ("operator", "values", "labels", "failed"),
    [
        ("In", ["a", "b"], {"k": "c"}, {"requirement": "k in (a,b)", "value": "c"}),
        ("In", ["a"], {"k": "a"}, None),
        ("NotIn", ["a"], {}, None),
        ("Exists", None, {}, {"requirement": "k", "value": None}),
        ("DoesNotExist", None, {"k": ""}, {"requirement": "!k", "value": ""}),
    ],
)
def test_cluster_failed_requirement(
    operator: str, values: list[str] | None, labels: dict[str, str], failed: dict[str, Any] | None
) -> None:
    requirement = LabelSelectorRequirement(key="k", operator=operator, values=values)
    assert failed_requirement(compile_selector(None, [requirement]), labels) == failed
