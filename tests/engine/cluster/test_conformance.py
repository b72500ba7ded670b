"""The published conformance examples, kept in this project's own table (cluster_conformance_cases.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.status import Code
from engine.core import EngineSettings
from tests.engine.cluster.cluster_builders import (
    ClusterBuilder,
    World,
    a_cluster,
    a_placement,
    condition,
    decided,
    run,
    ts,
)
from tests.engine.drivers.cluster import Driver, clusters, data, key_of
from topics.placement import Placement

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "cluster_conformance_cases.json").read_text())


def _cluster(raw: dict[str, Any]) -> ClusterBuilder:
    builder = a_cluster(raw["name"]).with_labels(raw.get("labels", {})).with_claims(raw.get("claims", {}))
    for taint in raw.get("taints", []):
        builder = builder.with_taint(
            taint["key"], taint.get("value", ""), taint["effect"], taint.get("timeAdded"), taint.get("firstSeen")
        )
    if raw.get("allocatable"):
        builder = builder.with_resources(raw["allocatable"], raw.get("capacity", {}))
    if raw.get("terminating"):
        builder = builder.being_deleted()
    return builder


def _world(case: dict[str, Any]) -> World:
    world = World(clusters=[_cluster(c) for c in case["clusters"]], sets=dict(case["sets"]))
    for namespace, names in case["bindings"].items():
        world.with_binding(namespace, *names)
    for score in case["scores"]:
        world.with_score(score["cluster"], score["resource"], score["values"], score.get("validUntil"))
    return world


def _placement(case: dict[str, Any]) -> Placement:
    spec = case["placement"]
    return a_placement(
        spec["spec"], name=spec["name"], namespace=spec["namespace"], annotations=spec.get("annotations")
    )


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_cluster_conformance_case(case: dict[str, Any]) -> None:
    now = ts(case["at"])
    result = run(_world(case), _placement(case), now=now, current=case["current"], balance=case["balance"])
    want = case["want"]
    if "clusters" in want:
        assert decided(result) == want["clusters"]
    if "selectedCount" in want:
        assert len(result.selected) == want["selectedCount"]
    if "satisfied" in want:
        status, reason, message = condition(result, SATISFIED)
        assert status == ("True" if want["satisfied"]["status"] else "False")
        assert reason == want["satisfied"].get("reason", reason)
        assert message == want["satisfied"].get("message", message)
    if "misconfigured" in want:
        status, _, message = condition(result, MISCONFIGURED)
        assert status == ("True" if want["misconfigured"]["status"] else "False")
        assert message == want["misconfigured"].get("message", message)
        assert message.startswith(want["misconfigured"].get("messagePrefix", ""))
    if "totals" in want:  # every passing cluster's total is explain data (K4); the decision's are the selected
        assert result.passing_scores == want["totals"]
        assert result.scores == {name: want["totals"][name] for name in sorted(result.selected)}
    if "ranked" in want:
        assert result.ranked() == want["ranked"]
    if "prioritizers" in want:
        got = [[p.name, p.weight, p.scores] for p in result.prioritizers]
        assert got == want["prioritizers"]
    if "filteredBy" in want:
        assert result.filtered_by == want["filteredBy"]
    if "warning" in want:
        assert result.status.code is Code.WARNING
        assert result.status.message == want["warning"]
    if "eligibleSets" in want:
        assert list(result.eligible_sets) == want["eligibleSets"]
    if "timerSeconds" in want:
        seconds = None if result.due is None else (result.due - now).total_seconds()
        assert seconds == want["timerSeconds"]
    if "groups" in want:
        got_groups = [
            [
                g.index,
                g.name,
                list(g.clusters),
                [p.name for p in result.pages if p.group_index == g.index],
                len(g.clusters),
            ]
            for g in result.groups
        ]
        assert got_groups == want["groups"]
    if "pages" in want:
        assert [[p.name, p.group_index, p.group_name, list(p.clusters)] for p in result.pages] == want["pages"]


SCORED = [c for c in CASES if "totals" in c["want"]]


@pytest.mark.parametrize("explain", [False, True], ids=["decision", "explained"])
@pytest.mark.parametrize("case", SCORED, ids=[c["id"] for c in SCORED])
def test_cluster_conformance_scores_in_the_published_event(case: dict[str, Any], explain: bool) -> None:
    """Through the engine: the event carries the selected clusters' totals (K3), and only when explain is
    requested every passing cluster's total (K4). A case's current decisions are held as published (D10), its
    Balance counts as other placements' decisions."""
    placement = _placement(case)
    settings = EngineSettings(explain=frozenset({key_of(placement)}) if explain else frozenset())
    driver = Driver(_world(case), settings, now=ts(case["at"]))
    driver.decided_elsewhere(case["balance"])
    if case["current"]:
        driver.hold(placement, case["current"])
    event = data(driver.apply(placement)[0])  # the evaluation of the case, before any follow-up (L5)
    want, totals = case["want"], case["want"]["totals"]
    assert clusters(event) == want["clusters"]
    assert event.scores == {name: totals[name] for name in sorted(want["clusters"])}
    assert list(event.scores) == sorted(event.scores)
    assert event.passing_scores == (totals if explain else None)
