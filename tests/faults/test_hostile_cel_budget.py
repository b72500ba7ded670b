"""A tenant's Placement whose CEL reads the cluster and then loops until the per-expression cost limit stops it,
on every cluster of a 300-cluster set, through `placement-stream replay`: the per-placement budget (cluster C17)
stops it after a bounded number of clusters, it is decided with no match and a Warning naming the budget, and a
canary placement produced after it is decided as usual. Outcomes and counts are asserted, never times."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from celpy.adapter import json_to_cel
from celpy.evaluation import Activation

from engine.cluster.matching.cel_env import CelProgram, compile_expression, make_functions
from engine.core import CEL_PLACEMENT_BUDGET, CostlyEngine
from engine.inventory import Inventory
from streams.replay import Replayer
from streams.settings import Settings
from tests.faults.hostile_records import SET_LABEL, cel, cluster, event, placement

CLUSTERS = 300
LIST_1000 = "[" + ",".join(map(str, range(1000))) + "]"
HOSTILE = f"managedCluster.metadata.name != '' && {LIST_1000}.all(x, {LIST_1000}.all(y, x >= 0))"
CANARY = "managedCluster.metadata.labels.env == 'prod'"
NAMES = [f"tenant-{i:04d}" for i in range(CLUSTERS)]
PROD = {name for i, name in enumerate(NAMES) if i % 3 == 0}


def _line(topic: str, key: str, kind: str, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"topic": topic, "timestamp": "2026-11-23T10:00:00Z", "key": key, "value": event(kind, data)})


def _placement(name: str, expression: str, generation: int = 1) -> bytes:
    data = placement("tenant", name, {**cel(expression), "clusterSets": ["tenant"]}, generation=generation)
    return _line("submissions", f"Placement/tenant/{name}", "placement.applied", data)


def _inputs() -> list[bytes]:
    selector = {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}
    lines = [
        _line("cluster-status", "ManagedClusterSet/tenant", "managedclusterset.applied",
              {"metadata": {"name": "tenant"}, "spec": selector}),
        _line("cluster-status", "ManagedClusterSetBinding/tenant/tenant", "managedclustersetbinding.applied",
              {"metadata": {"name": "tenant", "namespace": "tenant"}, "spec": {"clusterSet": "tenant"}}),
    ]  # fmt: skip
    for name in NAMES:
        labels = {SET_LABEL: "tenant", "env": "prod" if name in PROD else "dev"}
        lines.append(_line("cluster-status", f"ManagedCluster/{name}", "managedcluster.applied", cluster(name, labels)))
    return lines


def _decisions(out: bytes) -> dict[str, dict[str, Any]]:
    """The last `placement.decided` data of each placement."""
    found: dict[str, dict[str, Any]] = {}
    for raw in out.splitlines():
        line = orjson.loads(raw)
        value = line.get("value")
        if isinstance(value, dict) and value.get("type") == "placement.decided.v1":
            found[line["key"]] = value["data"]
    return found


def _clusters(data: dict[str, Any]) -> set[str]:
    return {d["clusterName"] for page in data.get("placementDecisions", []) for d in page["status"]["decisions"]}


def _cost_on_one_cluster() -> int:
    """What the hostile expression spends on a cluster before its own limit stops it (the same on each)."""
    program = CelProgram((compile_expression(HOSTILE),), Activation(functions=make_functions(Inventory())))
    program.matches(json_to_cel({"metadata": {"name": NAMES[0]}}))
    assert program.stopped == 1
    return program.spent


@pytest.fixture(scope="module")
def replayed() -> tuple[Replayer, dict[str, dict[str, Any]]]:
    out = io.BytesIO()
    replayer = Replayer(Settings(), out)
    for line in _inputs():
        replayer.feed(line)
    replayer.feed(_placement("hostile", HOSTILE))
    replayer.feed(_placement("canary", CANARY))
    return replayer, _decisions(out.getvalue())


def test_hostile_placement_is_decided_with_no_match_and_a_budget_warning(
    replayed: tuple[Replayer, dict[str, dict[str, Any]]],
) -> None:
    _, decisions = replayed
    hostile = decisions["Placement/tenant/hostile"]
    assert _clusters(hostile) == set()
    fitted = CEL_PLACEMENT_BUDGET // _cost_on_one_cluster()
    assert 0 < fitted < CLUSTERS
    assert hostile["warning"] == {
        "plugin": "Predicate",
        "message": f'CEL expression "{HOSTILE[:200]}..." stopped: placement budget of {CEL_PLACEMENT_BUDGET} cost '
        f"units exceeded, {CLUSTERS - fitted} clusters not evaluated",
    }


def test_canary_after_the_hostile_placement_is_decided(replayed: tuple[Replayer, dict[str, dict[str, Any]]]) -> None:
    _, decisions = replayed
    canary = decisions["Placement/tenant/canary"]
    assert _clusters(canary) == PROD
    assert canary.get("warning") is None


def test_hostile_evaluation_ran_a_bounded_number_of_clusters(
    replayed: tuple[Replayer, dict[str, dict[str, Any]]],
) -> None:
    """The clusters within the budget, and the one that took it past it: each stopped at its own limit once."""
    replayer, _ = replayed
    fitted = CEL_PLACEMENT_BUDGET // _cost_on_one_cluster()
    counters = replayer.runtime.counters()
    assert (counters["cel_budget_stops"], counters["cel_evaluations_stopped"]) == (1, fitted + 1)
    assert replayer.runtime.take_notices() == []


def test_hostile_placement_stopped_again_is_noted_with_its_key(
    replayed: tuple[Replayer, dict[str, dict[str, Any]]],
) -> None:
    """Applied again (a new generation), it is stopped again at once: its outcomes are known, and charged."""
    replayer, _ = replayed
    before = replayer.runtime.counters()
    replayer.feed(_placement("hostile", HOSTILE, generation=2))
    after = replayer.runtime.counters()
    assert after["cel_budget_stops"] == before["cel_budget_stops"] + 1
    assert after["cel_evaluations_stopped"] == before["cel_evaluations_stopped"]
    [(key, message)] = replayer.runtime.take_notices()
    assert key == "Placement/tenant/hostile"
    assert "stopped by its placement budget again (2 in a row)" in message


def test_a_placement_stopped_by_its_budget_is_decided_after_the_others_of_its_batch(
    replayed: tuple[Replayer, dict[str, dict[str, Any]]],
) -> None:
    """Once stopped by its budget it is costly (platform P15): a batch that changes it and a placement whose key
    sorts after it decides the other placement first."""
    replayer, _ = replayed
    hostile, later = "Placement/tenant/hostile", "Placement/tenant/z-canary"
    replayer.feed(_placement("z-canary", CANARY))
    engine = replayer.runtime.engine_for(hostile)
    assert isinstance(engine, CostlyEngine)
    assert engine.costly(hostile, replayer.runtime.states[hostile])
    assert not engine.costly(later, replayer.runtime.states[later])
    replayer.out = out = io.BytesIO()
    # one line, one batch: a new prod cluster in the set moves both the hostile placement and the canary
    labels = {SET_LABEL: "tenant", "env": "prod"}
    replayer.feed(_line("cluster-status", "ManagedCluster/tenant-new", "managedcluster.applied",
                        cluster("tenant-new", labels)))  # fmt: skip
    decided = [orjson.loads(raw)["key"] for raw in out.getvalue().splitlines()]
    decided = [key for key in decided if key in (hostile, later)]
    assert decided == [later, hostile]
