"""Prioritizer weights, formulas, sorting and selection (spec E, F, G)."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.compiled import compile_placement
from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.evaluate import evaluate
from engine.cluster.pipeline.framework import EvalContext
from engine.cluster.pipeline.plugins.balance import balance_scores
from engine.cluster.pipeline.status import Code
from engine.cluster.pipeline.weights import plan_prioritizers
from engine.cluster.tracking.indexes import PlacementIndex, TrackedPlacement
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, condition, decided, one_set_world, run

THREE = (a_cluster("c1"), a_cluster("c2"), a_cluster("c3"))
BUILTINS = ("Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory")


def _policy(*configs: dict[str, Any], mode: str | None = None, **extra: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"configurations": list(configs)}
    if mode is not None:
        policy["mode"] = mode
    return {"prioritizerPolicy": policy, **extra}


def _builtin(name: str, weight: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}}
    if weight is not None:
        config["weight"] = weight
    return config


def _addon(resource: str, score: str, weight: int = 1) -> dict[str, Any]:
    return {
        "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": resource, "scoreName": score}},
        "weight": weight,
    }


@pytest.mark.parametrize(
    ("max_count", "counts", "scores"),
    [
        (2, [1, 2], [0, -100]),
        (3, [1, 2, 3], [32, -32, -100]),
        (4, [1, 2, 3, 4], [50, 0, -50, -100]),
        (5, [1, 2, 3, 4, 5], [60, 18, -18, -60, -100]),
        (7, [0], [100]),
    ],
)
def test_cluster_balance_formula(max_count: int, counts: list[int], scores: list[int]) -> None:
    assert list(balance_scores(counts, max_count)) == scores


@pytest.mark.parametrize("max_count", [1, 2, 3, 7, 49, 64, 701, 1999, 2000, 4096])
def test_cluster_balance_scores_of_a_count_array_are_the_formula(max_count: int) -> None:
    """An array of counts (as the prioritizer passes them) gets exactly the formula's scores, computed here in
    Python floats, for every count up to max; the array itself is left as it was."""
    counts = np.arange(max_count + 1, dtype=np.int64)
    expected = [2 * math.trunc(100.0 * (0.5 - count / max_count)) for count in range(max_count + 1)]
    assert balance_scores(counts, max_count).tolist() == expected
    assert counts.tolist() == list(range(max_count + 1))


@pytest.mark.parametrize("max_count", [1, 2, 3, 5, 7, 64, 701])
def test_cluster_balance_prioritizer_scores_every_count_by_the_formula(max_count: int) -> None:
    clusters = [a_cluster(f"c{i:04d}") for i in range(max_count + 1)]
    counts = {f"c{i:04d}": i for i in range(max_count + 1)}  # c0000 is decided nowhere
    result = run(one_set_world(*clusters), a_placement(), balance=counts)
    balance = next(p for p in result.prioritizers if p.name == "Balance")
    assert balance.scores == dict(zip(counts, balance_scores(counts.values(), max_count), strict=True))


@pytest.mark.parametrize(("balance_weight", "steady_weight"), [(1, 1), (3, -2), (-1, 5)])
def test_cluster_balance_and_steady_discount_own_decision(balance_weight: int, steady_weight: int) -> None:
    """Through the engine's own counts (OthersView), with and without explain: a held cluster's count
    excludes this placement's decision, and both evaluation paths agree."""
    index = PlacementIndex()
    for key, clusters in (("ns1/other", {"c1", "c2"}), ("ns1/third", {"c1"}), ("ns1/placement1", {"c1", "c3"})):
        index.put(key, TrackedPlacement("ns1", frozenset(), frozenset(), frozenset(clusters)))
    world = one_set_world(*THREE)
    spec = _policy(_builtin("Balance", balance_weight), _builtin("Steady", steady_weight))
    results = []
    for explain in (True, False):
        placement = a_placement(spec)
        ctx = EvalContext(
            placement=placement,
            view=InventoryView(world.inventory(NOW)),
            now=NOW,
            current=frozenset({"c1", "c3"}),
            others=index.others("ns1/placement1"),
            compiled=compile_placement(placement),
            explain=explain,
        )
        results.append(evaluate(ctx))
    # others decided c1 twice and c2 once: maxCount 2
    balance = dict(zip(("c1", "c2", "c3"), balance_scores((2, 1, 0), 2), strict=True))
    steady = {"c1": 100, "c2": 0, "c3": 100}
    expected = {name: balance_weight * balance[name] + steady_weight * steady[name] for name in balance}
    assert results[0].scores == results[1].scores == expected


def test_cluster_balance_max_count_includes_non_candidates() -> None:
    result = run(one_set_world(*THREE), a_placement(), balance={"c1": 1, "elsewhere": 4})
    balance = next(p for p in result.prioritizers if p.name == "Balance")
    assert balance.scores == {"c1": 50, "c2": 100, "c3": 100}


@pytest.mark.parametrize(
    ("allocatable", "expected"),
    [
        ({"c1": "10", "c2": "17", "c3": "20"}, {"c1": -100, "c2": 39, "c3": 100}),
        ({"c1": "0", "c2": "3", "c3": "10"}, {"c1": -100, "c2": -40, "c3": 100}),
        ({"c1": "0", "c2": "2", "c3": "3"}, {"c1": -100, "c2": 33, "c3": 100}),
        ({"c1": "0", "c2": "6", "c3": "10"}, {"c1": -100, "c2": 19, "c3": 100}),
        ({"c1": "0", "c2": "8", "c3": "10"}, {"c1": -100, "c2": 60, "c3": 100}),
        ({"c1": "500m", "c2": "500m", "c3": "500m"}, {"c1": 100, "c2": 100, "c3": 100}),
        ({"c1": "1Gi", "c2": "1536Mi"}, {"c1": -100, "c2": 100}),
        ({"c1": "1e400", "c2": "2", "c3": "4"}, {"c2": -100, "c3": 100}),
    ],
    ids=["0.7", "0.3", "2/3", "0.6", "0.8", "equal", "missing-resource-no-score", "infinite-is-no-quantity"],
)
def test_cluster_resource_formula(allocatable: dict[str, str], expected: dict[str, int]) -> None:
    clusters = [a_cluster(n).with_resources({"cpu": v, "memory": v}) for n, v in allocatable.items()]
    clusters += [a_cluster(n) for n in ("c1", "c2", "c3") if n not in allocatable]
    for builtin in ("ResourceAllocatableCPU", "ResourceAllocatableMemory"):
        result = run(one_set_world(*clusters), a_placement(_policy(_builtin(builtin), mode="Exact")))
        assert result.prioritizers[0].scores == expected
        assert result.passing_scores == {**dict.fromkeys(("c1", "c2", "c3"), 0), **expected}


def test_cluster_resource_requires_capacity() -> None:
    only_alloc = a_cluster("c1").with_resources({"cpu": "4"}, capacity={"memory": "1"})
    result = run(
        one_set_world(only_alloc, a_cluster("c2").with_resources({"cpu": "2"})),
        a_placement(_policy(_builtin("ResourceAllocatableCPU"), mode="Exact")),
    )
    assert result.prioritizers[0].scores == {"c2": 100}


@pytest.mark.parametrize(
    ("current", "scores"),
    [
        ([], {"c1": 100, "c2": 100, "c3": 100}),
        (["c3"], {"c1": 100, "c2": 100, "c3": 200}),
        (["c3", "gone"], {"c1": 100, "c2": 100, "c3": 200}),
        (["c1", "c2", "c3"], {"c1": 200, "c2": 200, "c3": 200}),
    ],
    ids=["none", "one", "one-and-a-non-candidate", "all"],
)
def test_cluster_steady_keeps_current_decisions(current: list[str], scores: dict[str, int]) -> None:
    """Only held candidates move; a held cluster that is no longer a candidate gets no score."""
    result = run(one_set_world(*THREE), a_placement({"numberOfClusters": 1}), current=current)
    assert decided(result) == (["c3"] if current[:1] == ["c3"] else ["c1"])
    assert result.passing_scores == scores


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_policy(mode="Weird"), ":incorrect prioritizer policy mode: Weird"),
        (_policy({"weight": 2}), ":scoreCoordinate field is required"),
        (_policy({"scoreCoordinate": {"type": "AddOn"}}), ":addOn should not be empty"),
        (_policy(_builtin("Nope"), {"weight": 1}), ":scoreCoordinate field is required"),
        (_policy(_builtin("First"), _builtin("Second")), ":incorrect builtin prioritizer: First"),
        ({"numberOfClusters": -2}, ":numberOfClusters cannot be negative: -2"),
        ({"numberOfClusters": -2, **_policy(_builtin("Bad"))}, ":incorrect builtin prioritizer: Bad"),
    ],
    ids=[
        "mode",
        "no-coordinate",
        "addon-empty",
        "configs-before-names",
        "first-bad-name",
        "negative-noc",
        "prioritizer-before-noc",
    ],
)
def test_cluster_weight_misconfigurations(spec: dict[str, Any], message: str) -> None:
    result = run(one_set_world(*THREE), a_placement(spec))
    assert condition(result, MISCONFIGURED) == ("True", "Misconfigured", message)
    assert decided(result) == []
    assert result.scores == result.passing_scores == {}
    assert condition(result, SATISFIED)[1] == "NoManagedClusterMatched"


def test_cluster_weight_zero_disables_without_validation() -> None:
    result = run(
        one_set_world(*THREE), a_placement(_policy(_builtin("Spread", 0), _builtin("Steady", 0))), current=["c1"]
    )
    assert condition(result, MISCONFIGURED)[0] == "False"
    assert [p.name for p in result.prioritizers] == ["Balance"]


def test_cluster_additive_order_and_later_weight_wins() -> None:
    spec = _policy(
        _builtin("ResourceAllocatableCPU", 2), _addon("r", "s", 3), _builtin("Balance", 5), _addon("r", "s", -1)
    )
    result = run(one_set_world(*THREE), a_placement(spec))
    assert [(p.name, p.weight) for p in result.prioritizers] == [
        ("Balance", 5),
        ("Steady", 1),
        ("ResourceAllocatableCPU", 2),
        ("AddOn/r/s", -1),
    ]


def test_cluster_negative_weights_and_tie_break_by_name() -> None:
    spec = _policy(_builtin("Steady", -3), mode="Exact", numberOfClusters=2)
    result = run(
        one_set_world(a_cluster("cluster2"), a_cluster("cluster10"), a_cluster("x")), a_placement(spec), current=["x"]
    )
    assert result.ranked() == ["cluster10", "cluster2", "x"]
    assert result.selected == ["cluster10", "cluster2"]
    assert result.passing_scores["x"] == -300
    assert result.scores == {"cluster10": 0, "cluster2": 0}


def test_cluster_addon_scores_and_expiry_warning() -> None:
    world = one_set_world(a_cluster("c1"), a_cluster("c2"), a_cluster("c3"), a_cluster("c4"))
    world.with_score("c1", "res", {"s": 30, "t": 1}, valid_until="2022-01-01T00:00:00Z")
    world.with_score("c2", "res", {"s": 90}, valid_until="2021-12-31T23:00:00Z")
    world.with_score("c3", "res", {"s": 5, "s ": 1})
    world.with_score("c4", "other", {"s": 100}, valid_until="2021-01-01T00:00:00Z")
    spec = _policy(_addon("res", "s", 2), _addon("other", "s"), mode="Exact")
    result = run(world, a_placement(spec))
    assert result.prioritizers[0].scores == {"c1": 30, "c2": 0, "c3": 5, "c4": 0}
    assert result.scores == result.passing_scores == {"c1": 60, "c2": 0, "c3": 10, "c4": 0}
    assert result.status.code is Code.WARNING
    assert (result.status.plugin, result.status.message) == ("AddOn/other/s", "AddOnPlacementScores c4/other expired")
    assert condition(result, MISCONFIGURED)[0] == "False"
    assert (result.due - NOW).total_seconds() == 1.0  # type: ignore[operator]


def test_cluster_addon_warning_lists_expired_by_name() -> None:
    world = one_set_world(a_cluster("b"), a_cluster("a"))
    for name in ("a", "b"):
        world.with_score(name, "res", {"s": 1}, valid_until="2021-01-01T00:00:00Z")
    result = run(world, a_placement(_policy(_addon("res", "s"))))
    assert result.status.message == "AddOnPlacementScores a/res b/res expired"
    assert decided(result) == ["a", "b"]


@pytest.mark.parametrize(
    ("count", "selected", "reason", "message"),
    [
        (None, 3, "AllDecisionsScheduled", "All cluster decisions scheduled"),
        (2, 2, "AllDecisionsScheduled", "All cluster decisions scheduled"),
        (5, 3, "NotAllDecisionsScheduled", "2 cluster decisions unscheduled"),
        (0, 0, "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate"),
    ],
)
def test_cluster_number_of_clusters(count: int | None, selected: int, reason: str, message: str) -> None:
    spec = {} if count is None else {"numberOfClusters": count}
    result = run(one_set_world(*THREE), a_placement(spec))
    assert len(result.selected) == selected
    assert condition(result, SATISFIED)[1:] == (reason, message)


def _oracle_totals(
    allocatable: dict[str, tuple[int, int]],
    counts: dict[str, int],
    current: set[str],
    weights: dict[str, int],
) -> dict[str, int]:
    """E7 with F1, F2 and F4 written out in Python ints and floats, one cluster at a time."""
    top = max(counts.values(), default=0)
    totals = dict.fromkeys(sorted(allocatable), 0)
    for index, resource in enumerate(("ResourceAllocatableCPU", "ResourceAllocatableMemory")):
        values = {name: float(pair[index]) for name, pair in allocatable.items()}
        low, high = min(values.values()), max(values.values())
        for name, value in values.items():
            score = 100 if high == low else math.trunc(((value - low) / (high - low) - 0.5) * 2.0 * 100.0)
            totals[name] += weights[resource] * score
    for name in totals:
        count = counts.get(name, 0)
        balance = 100 if top <= 0 or count == 0 else 2 * math.trunc(100.0 * (0.5 - count / top))
        totals[name] += weights["Balance"] * balance + weights["Steady"] * (100 if name in current else 0)
    return totals


@pytest.mark.parametrize("seed", range(12))
def test_cluster_scores_and_selection_match_the_formulas_written_out(seed: int) -> None:
    """Random fleets, counts, decisions, weights and numberOfClusters: the totals equal the formulas computed
    cluster by cluster, and the selection is the first n by (total desc, name asc) (G1)."""
    rng = random.Random(seed)
    names = [f"c{rng.randrange(10_000):05d}" for _ in range(rng.randint(1, 60))]
    allocatable = {name: (rng.choice((1, 2, 4, 8, 16)), rng.choice((1, 3, 9))) for name in names}
    clusters = [
        a_cluster(name).with_resources({"cpu": str(cpu), "memory": f"{memory}Gi"})
        for name, (cpu, memory) in allocatable.items()
    ]
    counts = {name: rng.randint(0, 6) for name in rng.sample(sorted(allocatable), len(allocatable) // 2)}
    counts["elsewhere"] = rng.randint(0, 8)  # counted, never a candidate (F2)
    current = set(rng.sample(sorted(allocatable), len(allocatable) // 3)) | {"gone"}
    weights = {name: rng.randint(-3, 3) for name in BUILTINS}
    wanted = rng.choice((None, 0, 1, len(allocatable) // 2, len(allocatable), len(allocatable) + 5))
    spec = _policy(*(_builtin(name, weight) for name, weight in weights.items()), mode="Exact")
    if wanted is not None:
        spec["numberOfClusters"] = wanted
    result = run(one_set_world(*clusters), a_placement(spec), current=sorted(current), balance=counts)
    expected = _oracle_totals(allocatable, counts, current, weights)
    assert result.passing_scores == expected
    assert list(result.passing_scores) == sorted(expected)
    ranked = sorted(expected, key=lambda name: (-expected[name], name))
    assert result.selected == (sorted(expected) if wanted is None else ranked[:wanted])
    assert result.scores == {name: expected[name] for name in sorted(result.selected)}
    assert decided(result) == sorted(result.selected)


def test_cluster_plan_is_kept_per_policy_object() -> None:
    """Every evaluation and candidate-change check plans its placement's policy: the plan is made once per
    policy object, and Placements with equal policies share the policy object, so its plan too."""
    exact = {"prioritizerPolicy": {"mode": "Exact", "configurations": [_builtin("Steady", 2)]}}
    policy = a_placement(exact).spec.prioritizer_policy
    plan = plan_prioritizers(policy)
    assert plan_prioritizers(policy)[0] is plan[0]  # the entries, not the pair: compiled code re-packs pairs
    assert [(p.prioritizer.name, p.weight) for p in plan[0]] == [("Steady", 2)]
    additive = a_placement({}).spec.prioritizer_policy
    assert [(p.prioritizer.name, p.weight) for p in plan_prioritizers(additive)[0]] == [("Balance", 1), ("Steady", 1)]
    again = a_placement(exact).spec.prioritizer_policy
    assert again is policy and plan_prioritizers(again)[0] is plan[0]
