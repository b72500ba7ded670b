"""Candidate generation (hybrid spec B1–B7) and identity matching (B8, E5, E6), as tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hybrid_tables import build_all, labels

from engine.hybrid.candidates import CandidateError, generate
from engine.hybrid.identity import Ref, entry_matches, index_entries, sort_refs
from engine.inventory import Inventory
from topics.k8s import ObjectReference
from topics.placementrule import PlacementRuleSpec, RecommendationEntry, targets_match

T0 = datetime(2026, 1, 1, tzinfo=UTC)

MIXED = [
    {"kind": "ManagedCluster", "name": "east", "labels": {"env": "prod", "region": "us"}},
    {"kind": "ManagedCluster", "name": "west", "labels": {"env": "dev", "region": "us"}},
    {"kind": "ManagedCluster", "name": "asia", "labels": {"env": "dev"}},
    {"kind": "ManagedCluster", "name": "local-cluster", "labels": {"env": "dev"}},
    {"kind": "Deployer", "namespace": "ns-b", "name": "k8s", "type": "kubernetes", "labels": {"env": "dev"}},
    {"kind": "Deployer", "namespace": "ns-a", "name": "k8s", "type": "kubernetes", "labels": {"env": "prod"}},
    {"kind": "Deployer", "namespace": "ns-a", "name": "helm", "type": "Helm"},
    {"kind": "Deployer", "namespace": "zz", "name": "kv", "type": "kubevirt", "placesOnto": "VirtualMachine"},
    {"kind": "Deployer", "namespace": "aa", "name": "kv-first", "type": "kubevirt2", "placesOnto": "VirtualMachine"},
    {"kind": "Deployer", "namespace": "zz", "name": "kv-second", "type": "kubevirt2"},
    {"kind": "VirtualMachine", "namespace": "toronto", "name": "prod", "labels": {"env": "prod"}},
    {"kind": "VirtualMachine", "namespace": "raleigh", "name": "dev", "labels": {"env": "dev"}},
    {"kind": "VirtualMachine", "namespace": "Raleigh", "name": "upper", "labels": {"env": "dev"}},
]

# (id, spec, expected candidates in order, expected pool kind)
GENERATION = [
    ("B2-no-deployerType-all-clusters-sorted", {}, ["asia", "east", "west"], "ManagedCluster"),
    ("B3-explicit-kubernetes-selects-deployers", {"deployerType": "kubernetes"}, ["ns-a/k8s", "ns-b/k8s"], "Deployer"),
    ("B3-deployer-type-exact-match", {"deployerType": "helm"}, [], ""),
    ("B3-deployer-type-without-target", {"deployerType": "Helm"}, ["ns-a/helm"], "Deployer"),
    (
        "B3-placementTarget-every-object-of-kind",
        {"deployerType": "kubevirt"},
        ["Raleigh/upper", "raleigh/dev", "toronto/prod"],
        "VirtualMachine",
    ),
    (
        "B3-first-deployer-by-key-decides-the-pool",
        {"deployerType": "kubevirt2"},
        ["Raleigh/upper", "raleigh/dev", "toronto/prod"],
        "VirtualMachine",
    ),
    ("B3-no-deployer-of-type-empty-pool", {"deployerType": "nothing"}, [], ""),
    ("B4-matchLabels", {"targetLabels": {"matchLabels": {"env": "dev"}}}, ["asia", "west"], "ManagedCluster"),
    (
        "B4-matchExpressions-In",
        {"targetLabels": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "qa"]}]}},
        ["east"],
        "ManagedCluster",
    ),
    (
        "B4-matchExpressions-NotIn-missing-key-passes",
        {"targetLabels": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us"]}]}},
        ["asia"],
        "ManagedCluster",
    ),
    (
        "B4-matchExpressions-Exists",
        {"targetLabels": {"matchExpressions": [{"key": "region", "operator": "Exists"}]}},
        ["east", "west"],
        "ManagedCluster",
    ),
    (
        "B4-matchExpressions-DoesNotExist",
        {"targetLabels": {"matchExpressions": [{"key": "region", "operator": "DoesNotExist"}]}},
        ["asia"],
        "ManagedCluster",
    ),
    ("B4-empty-selector-everything", {"targetLabels": {}}, ["asia", "east", "west"], "ManagedCluster"),
    (
        "B4-labels-on-deployers",
        {"deployerType": "kubernetes", "targetLabels": {"matchLabels": {"env": "dev"}}},
        ["ns-b/k8s"],
        "Deployer",
    ),
    ("B5-targets-by-name", {"targets": [{"name": "west"}, {"name": "east"}]}, ["east", "west"], "ManagedCluster"),
    ("B5-empty-entry-matches-everything", {"targets": [{}]}, ["asia", "east", "west"], "ManagedCluster"),
    ("B5-empty-targets-filters-nothing", {"targets": []}, ["asia", "east", "west"], "ManagedCluster"),
    ("B5-missing-target-not-added", {"targets": [{"name": "ghost"}, {"name": "asia"}]}, ["asia"], "ManagedCluster"),
    (
        "B5-namespace-only-entry",
        {"deployerType": "kubevirt", "targets": [{"namespace": "raleigh"}]},
        ["raleigh/dev"],
        "VirtualMachine",
    ),
    (
        "B5-name-and-namespace-both-must-match",
        {"deployerType": "kubernetes", "targets": [{"name": "k8s", "namespace": "ns-b"}]},
        ["ns-b/k8s"],
        "Deployer",
    ),
    (
        "B5-namespaced-target-never-matches-cluster",
        {"targets": [{"name": "east", "namespace": "east"}]},
        [],
        "ManagedCluster",
    ),
    (
        "B5-targets-AND-targetLabels",
        {"targets": [{"name": "east"}, {"name": "west"}], "targetLabels": {"matchLabels": {"env": "dev"}}},
        ["west"],
        "ManagedCluster",
    ),
    ("B6-local-cluster-never-a-candidate", {"targets": [{"name": "local-cluster"}]}, [], "ManagedCluster"),
    (
        "B7-byte-order-uppercase-first",
        {"deployerType": "kubevirt", "targetLabels": {"matchLabels": {"env": "dev"}}},
        ["Raleigh/upper", "raleigh/dev"],
        "VirtualMachine",
    ),
]


def _inventory(rows: list[dict[str, Any]]) -> Inventory:
    inventory = Inventory()
    for obj in build_all(rows):
        inventory.apply(obj, T0)
    return inventory


@pytest.mark.parametrize(("spec", "expected", "kind"), [g[1:] for g in GENERATION], ids=[g[0] for g in GENERATION])
def test_hybrid_candidate_generation(spec: dict[str, Any], expected: list[str], kind: str) -> None:
    pool = generate(PlacementRuleSpec.model_validate(spec), _inventory(MIXED))
    assert labels(pool.candidates) == expected
    assert pool.kind == kind
    assert {c.kind for c in pool.candidates} <= {kind}, "all candidates of a rule have one kind"


def test_hybrid_candidate_refs_carry_kind_and_api_version() -> None:
    pool = generate(PlacementRuleSpec(deployer_type="kubevirt"), _inventory(MIXED))
    assert pool.candidates[0] == Ref("VirtualMachine", "Raleigh", "upper")
    assert pool.candidates[0].api_version == "example.io/v1"
    clusters = generate(PlacementRuleSpec(), _inventory(MIXED))
    assert clusters.candidates[0].out().model_dump(by_alias=True, exclude_none=True) == {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "name": "asia",
    }


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "env", "operator": "Near", "values": ["x"]}]},
        {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": {"bad key!": "x"}},
    ],
    ids=["unknown-operator", "in-without-values", "exists-with-values", "invalid-key"],
)
def test_hybrid_candidate_invalid_selector_fails(selector: dict[str, Any]) -> None:
    spec = PlacementRuleSpec.model_validate({"targetLabels": selector})
    with pytest.raises(CandidateError, match="invalid targetLabels"):
        generate(spec, _inventory(MIXED))


@pytest.mark.parametrize(
    ("targets", "namespace", "name", "expected"),
    [
        ([], "ns", "a", True),
        ([{}], "ns", "a", True),
        ([{"name": "a"}], "ns", "a", True),
        ([{"name": "a"}], "", "a", True),
        ([{"name": "b"}], "ns", "a", False),
        ([{"namespace": "ns"}], "ns", "a", True),
        ([{"namespace": "other"}], "ns", "a", False),
        ([{"name": "a", "namespace": "other"}], "ns", "a", False),
        ([{"name": "a", "namespace": "ns"}], "", "a", False),
        ([{"name": "b"}, {"name": "a"}], "ns", "a", True),
    ],
)
def test_hybrid_target_entry_matching(targets: list[dict[str, str]], namespace: str, name: str, expected: bool) -> None:
    refs = [ObjectReference.model_validate(t) for t in targets]
    assert targets_match(refs, namespace, name) is expected


CLUSTER = Ref("ManagedCluster", "", "c1", "cluster.open-cluster-management.io/v1")
VM = Ref("VirtualMachine", "raleigh", "dev")


@pytest.mark.parametrize(
    ("entry", "ref", "expected"),
    [
        ({"name": "c1"}, CLUSTER, True),
        ({"name": "c1", "kind": "ManagedCluster"}, CLUSTER, True),
        ({"name": "c1", "kind": "Deployer"}, CLUSTER, False),
        ({"name": "c1", "namespace": "c1"}, CLUSTER, False),
        ({"name": "c1", "namespace": ""}, CLUSTER, True),
        ({"name": "c1", "apiVersion": "other/v9", "uid": "1234"}, CLUSTER, True),
        ({"name": "C1"}, CLUSTER, False),
        ({"name": "dev", "namespace": "raleigh"}, VM, True),
        ({"name": "dev"}, VM, False),
        ({"name": "dev", "namespace": "raleigh", "kind": "VirtualMachine"}, VM, True),
        ({"name": "dev", "namespace": "toronto"}, VM, False),
    ],
)
def test_hybrid_entry_identity_B8(entry: dict[str, Any], ref: Ref, expected: bool) -> None:
    assert entry_matches(RecommendationEntry.model_validate(entry), ref) is expected


def test_hybrid_ref_identity_ignores_api_version() -> None:
    assert Ref("ManagedCluster", "", "a", "v1") == Ref("ManagedCluster", "", "a", "v2")
    assert len({Ref("ManagedCluster", "", "a", "v1"), Ref("ManagedCluster", "", "a", "v2")}) == 1
    assert Ref("ManagedCluster", "", "a") != Ref("Deployer", "", "a")


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([], {}),
        ([{"name": "c1"}], {"c1": 100}),
        ([{"name": "c1", "score": 0}], {"c1": 0}),
        ([{"name": "ghost", "score": 5}], {}),
        ([{"name": "c1", "score": 10}, {"name": "c1", "score": 70}], {"c1": 70}),
        ([{"name": "c1", "score": 10}, {"name": "c1"}], {"c1": 100}),
        ([{"name": "c2", "score": 1}, {"name": "c1", "kind": "Deployer"}], {"c2": 1}),
    ],
    ids=["empty", "A3-unset-is-100", "zero", "E5-non-candidate", "E6-last-wins", "E6-last-unset", "B8-kind"],
)
def test_hybrid_answer_scores(entries: list[dict[str, Any]], expected: dict[str, int]) -> None:
    candidates = [Ref("ManagedCluster", "", "c1"), Ref("ManagedCluster", "", "c2")]
    scores = index_entries([RecommendationEntry.model_validate(e) for e in entries], candidates)
    assert {ident[2]: score for ident, score in scores.items()} == expected


def test_hybrid_sort_is_namespace_slash_name() -> None:
    refs = [Ref("X", "b", "a"), Ref("X", "a", "z"), Ref("X", "a-b", "a"), Ref("X", "", "zz")]
    assert labels(sort_refs(refs)) == ["zz", "a-b/a", "a/z", "b/a"], "'-' sorts before '/'"
