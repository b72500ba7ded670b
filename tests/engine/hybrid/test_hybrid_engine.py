"""The SubjectEngine contract of the hybrid engine: events in and out (C, J, D6), timers (F2), the inventory index
(C3), state round trips, invalid selectors (B4), and the whole path through the runtime with encoded records."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hybrid_tables import build, build_all, clusters, entries_of, labels, play

from engine.core import EngineSettings
from engine.errors import InvalidStateError
from engine.hybrid import HybridPlacementEngine, subject_key
from engine.hybrid.output import decided as snapshot_of
from engine.inventory import InventoryChange, ObjectKey
from engine.inventory.store import TAINTS_KIND
from engine.runtime import InputRecord, Runtime
from tests.engine.drivers.hybrid import T0, RuleDriver
from topics.codec import decode_event, dump_model, encode_event
from topics.events import EVENT_KINDS
from topics.names import TopicRole
from topics.placementrule import (
    CandidatesProposed,
    PlacementRuleDecided,
    RecommendationEntry,
    RecommendationPosted,
    RuleRef,
)

C3 = clusters("c1", "c2", "c3")
SPEC = {
    "replicas": 1,
    "advisors": [
        {"name": "grc", "type": "predicate", "rules": {"policies": [{"name": "p1"}]}},
        {"name": "rhacm", "weight": 60, "rules": {"resourceHint": {"type": "cpu"}}},
        {"name": "grc", "type": "priority", "weight": 10},
    ],
}


def test_hybrid_engine_identity() -> None:
    assert HybridPlacementEngine.KIND == "PlacementRule"
    assert frozenset({"placementrule.applied", "placementrule.deleted", "recommendation.posted"}) == (
        HybridPlacementEngine.EVENTS
    )
    assert subject_key("ns", "r") == "PlacementRule/ns/r"


def test_hybrid_new_rule_publishes_candidates_then_first_decision() -> None:
    driver = RuleDriver(build_all(C3), namespace="apps", name="db")
    step = driver.apply_rule(SPEC)
    assert [(e.kind, e.topic, e.key) for e in step.emits] == [
        ("candidates.proposed", TopicRole.ADVISOR_REQUESTS, None),
        ("placementrule.decided", TopicRole.DECISIONS, None),
    ]
    proposed = step.emits[0].data
    assert isinstance(proposed, CandidatesProposed)
    wire = dump_model(proposed)
    assert wire["rule"] == {"namespace": "apps", "name": "db"}
    assert wire["round"] == 1
    assert wire["advisors"] == ["grc", "rhacm"], "one answer per name (A2)"
    assert wire["advisorRules"] == {"grc": {"policies": [{"name": "p1"}]}, "rhacm": {"resourceHint": {"type": "cpu"}}}
    assert wire["advisorSpecs"] == [
        {"name": "grc", "type": "predicate", "weight": 100, "rules": {"policies": [{"name": "p1"}]}},
        {"name": "rhacm", "type": "priority", "weight": 60, "rules": {"resourceHint": {"type": "cpu"}}},
        {"name": "grc", "type": "priority", "weight": 10},
    ]
    assert wire["candidates"][0] == {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "name": "c1",
    }
    assert wire["status"]["round"] == 1
    assert wire["status"]["observedGeneration"] == 1
    assert wire["status"]["lastUpdateTime"] == "2026-01-01T00:00:00Z"
    decided = step.emits[1].data
    assert isinstance(decided, PlacementRuleDecided)
    assert dump_model(decided)["decisions"] == []
    assert decided.round == 1 and not decided.deleted


def test_hybrid_decided_carries_status_snapshot_and_reductions_H6() -> None:
    spec = {
        "replicas": 1,
        "decisionWeight": 100,
        "advisors": [{"name": "a", "weight": 60}, {"name": "b", "weight": 50}],
    }
    driver = RuleDriver(build_all(C3))
    driver.apply_rule(spec, decisions=[{"name": "c3"}])
    driver.post("a", [{"name": "c3"}])
    driver.post("b", [{"name": "c1", "score": 25}])
    assert driver.round == 2
    assert labels(driver.state.decisions if driver.state else []) == ["c3"]
    proposal = driver.proposals[-1]
    assert proposal.status is not None
    wire = dump_model(proposal.status)
    assert wire["eliminators"] == [
        {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "c2"}
    ]
    assert wire["decisions"] == [  # J1: a pasted decision is published as a copy of its candidate
        {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "c3"}
    ]
    assert wire["reductions"] == [{"round": 1, "removed": ["c2"]}]
    reduction = wire["lastReduction"]
    assert reduction["round"] == 1 and reduction["reason"] == "rating" and reduction["forced"] is False
    assert [r["name"] for r in reduction["removed"]] == ["c2"]
    assert [(r["candidate"]["name"], r["rating"], r["hundredths"]) for r in reduction["ratings"]] == [
        ("c1", 12.5, 1250),
        ("c2", 0.0, 0),
        ("c3", 160.0, 16000),
    ]
    driver.post("a", [{"name": "c3"}])
    driver.post("b", [{"name": "c3", "score": 40}, {"name": "c1"}])
    assert len(driver.decided_events) == 1, "c3 was published on the first evaluation and never changed"
    assert driver.state is not None
    snapshot = snapshot_of(driver.state)
    assert labels(snapshot.decisions) == ["c3"]
    wire = dump_model(snapshot)
    assert wire["recommendations"] == {"a": [{"name": "c3"}], "b": [{"name": "c3", "score": 40}, {"name": "c1"}]}
    assert [r["round"] for r in wire["reductions"]] == [1]
    assert wire["lastReduction"]["round"] == 1


def test_hybrid_status_keeps_the_latest_reduction_whole_and_earlier_ones_as_names_H6() -> None:
    driver = RuleDriver(build_all(clusters("c1", "c2", "c3", "c4")))
    driver.apply_rule({"replicas": 1, "advisors": [{"name": "a"}]})
    for scores in (["c1@10", "c2@20", "c3@30", "c4@40"], ["c2@50", "c3@5", "c4@60"], ["c2@1", "c4@2"], ["c4"]):
        driver.post("a", entries_of(scores))
    assert driver.state is not None and labels(driver.state.decisions) == ["c4"]
    statuses = [p.status for p in driver.proposals]
    assert [s.round if s else None for s in statuses] == [1, 2, 3, 4]
    wire = dump_model(driver.proposals[-1])["status"]
    assert wire["reductions"] == [
        {"round": 1, "removed": ["c1"]},
        {"round": 2, "removed": ["c3"]},
        {"round": 3, "removed": ["c2"]},
    ], "every round, with the names it removed"
    last = wire["lastReduction"]
    assert (last["round"], last["reason"], [r["name"] for r in last["removed"]]) == (3, "rating", ["c2"])
    assert {r["candidate"]["name"]: r["hundredths"] for r in last["ratings"]} == {"c2": 100, "c4": 200}
    assert "ratings" not in str(wire["reductions"]), "earlier rounds keep no ratings"
    # the state keeps the same: names for the history, the last step whole
    assert [(r.round, r.removed) for r in driver.state.reductions] == [(1, ("c1",)), (2, ("c3",)), (3, ("c2",))]
    assert driver.state.last_reduction is not None and len(driver.state.last_reduction.ratings) == 2


def test_hybrid_rule_without_advisors_decides_in_one_evaluation_unpublished_H6() -> None:
    names = [f"m{i:04d}" for i in range(600)]
    driver = RuleDriver(build_all(clusters(*names)))
    step = driver.apply_rule({"replicas": 1})
    assert [e.kind for e in step.emits] == ["placementrule.decided"], "nobody is asked: no candidates.proposed"
    state = driver.state
    assert state is not None
    assert labels(state.decisions) == ["m0599"], "ratings all 0: candidates fall in key order (H7)"
    assert state.round == 600 and state.deadline is None
    assert [(r.round, r.removed) for r in state.reductions] == [(i + 1, (n,)) for i, n in enumerate(names[:-1])]
    assert labels(state.eliminators) == names[:-1]
    last = state.last_reduction
    assert last is not None and last.round == 599 and labels(last.removed) == ["m0598"]
    assert [(r.ref.name, r.hundredths) for r in last.ratings] == [("m0598", 0), ("m0599", 0)]
    wire = orjson.dumps(dump_model(snapshot_of(state)))
    assert len(wire) < 200 * len(names), "the snapshot grows with the candidates, not with rounds times candidates"


def test_hybrid_state_written_before_h6_is_read_and_goes_on() -> None:
    """A changelog entry of the release that kept every reduction whole: restored, then the round it waits in is
    answered."""
    value = (Path(__file__).parent / "hybrid_state_before_h6.json").read_bytes()
    assert b'"ratings"' in value and b"lastReduction" not in value
    key = "PlacementRule/default/rule"
    runtime = Runtime([HybridPlacementEngine()], EngineSettings())
    runtime.restore(key, value)
    state = runtime.states[key]
    assert [(r.round, r.removed) for r in state.reductions] == [(1, ("cluster2",)), (2, ("cluster4",))]
    last = state.last_reduction
    assert last is not None and (last.round, last.reason, labels(last.removed)) == (2, "rating", ["cluster4"])
    assert [(r.ref.name, r.hundredths) for r in last.ratings] == [
        ("cluster1", 2000),
        ("cluster3", 16000),
        ("cluster4", 0),
    ]
    assert (state.round, labels(state.candidates), labels(state.eliminators)) == (
        3,
        ["cluster1", "cluster3"],
        ["cluster2", "cluster4"],
    )
    assert runtime.next_timer() == T0 + timedelta(seconds=30)
    rule = RuleRef(namespace="default", name="rule")
    posts = [
        RecommendationPosted(rule=rule, round=3, advisor=name, recommendations=[RecommendationEntry(name="cluster1")])
        for name in ("grc", "rhacm", "cost")
    ]
    records = [
        _record(TopicRole.ADVISOR_RECOMMENDATIONS, i, key, "recommendation.posted", p) for i, p in enumerate(posts)
    ]
    out = runtime.process(records, T0 + timedelta(seconds=1))
    decided = [decode_event(o.value, TopicRole.DECISIONS) for o in out if o.topic is TopicRole.DECISIONS and o.value]
    assert [labels(d.data.decisions) for d in decided] == [["cluster1"]]  # type: ignore[attr-defined]
    written = [o for o in out if o.topic is TopicRole.CHANGELOG][-1]
    assert written.value is not None and b'"ratings"' in written.value
    entry = orjson.loads(written.value)["state"]
    assert entry["reductions"] == [{"round": 1, "removed": ["cluster2"]}, {"round": 2, "removed": ["cluster4"]}]
    assert entry["lastReduction"]["round"] == 2


@pytest.mark.parametrize("how", ["event", "tombstone"])
def test_hybrid_delete_publishes_deleted_then_tombstone_D6(how: str) -> None:
    driver = RuleDriver(build_all(C3))
    driver.apply_rule({"advisors": [{"name": "a"}]})
    driver.post("a", [])
    assert driver.state is not None and driver.state.decisions
    if how == "event":
        step = driver.delete_rule()
    else:
        step = driver.engine.on_deleted(driver.key, driver.state, driver.context())
    assert step.state is None
    assert [e.kind for e in step.emits] == ["placementrule.decided", None]
    final = step.emits[0].data
    assert isinstance(final, PlacementRuleDecided)
    assert final.deleted is True and final.decisions == []
    assert step.emits[1].data is None and step.emits[1].topic is TopicRole.DECISIONS


def test_hybrid_unknown_rule_inputs_change_nothing() -> None:
    driver = RuleDriver(build_all(C3))
    assert driver.delete_rule().emits == ()
    step = driver.post("a", [{"name": "c1"}], 1)
    assert step.state is None and step.emits == ()


def test_hybrid_timer_uses_setting_and_fires_at_deadline_F2() -> None:
    driver = RuleDriver(build_all(C3), timeout_seconds=12)
    driver.apply_rule({"replicas": 1, "advisors": [{"name": "a"}, {"name": "b"}]})
    assert driver.state is not None
    assert driver.engine.next_due(driver.state) == T0 + timedelta(seconds=12)
    early = driver.engine.on_timer(driver.key, driver.state, driver.context())
    assert early.state == driver.state and early.emits == ()
    driver.post("b", [{"name": "c2"}])
    driver.advance(12)
    assert driver.state is not None
    assert labels(driver.state.decisions) == ["c2"]
    assert driver.engine.next_due(driver.state) is None
    assert driver.state.timed_out and driver.state.round == 1


def _change(kind: str, before: Any = None, after: Any = None, namespace: str = "", name: str = "x") -> InventoryChange:
    return InventoryChange(ObjectKey(kind, namespace, name), before, after)


def test_hybrid_affected_by_index_C3() -> None:
    inventory = [
        *C3,
        {"kind": "Deployer", "namespace": "d", "name": "kv", "type": "kubevirt", "placesOnto": "VirtualMachine"},
        {"kind": "Deployer", "namespace": "d", "name": "helm", "type": "Helm"},
        {"kind": "VirtualMachine", "namespace": "vm", "name": "one"},
    ]
    engine = HybridPlacementEngine()
    keys = {}
    for name, spec in [("clusters", {}), ("vms", {"deployerType": "kubevirt"}), ("helm", {"deployerType": "Helm"})]:
        driver = RuleDriver(build_all(inventory), name=name)
        driver.apply_rule(spec)
        assert driver.state is not None
        engine.track(driver.key, driver.state)
        keys[name] = driver.key
    ctx = RuleDriver().context()
    helm = build({"kind": "Deployer", "namespace": "d", "name": "h2", "type": "Helm"})
    kubevirt = build({"kind": "Deployer", "namespace": "d", "name": "k2", "type": "kubevirt"})
    cases = [
        ([_change("ManagedCluster", after=build(C3[0]))], ["clusters"]),
        ([_change("Deployer", after=helm)], ["helm"]),
        ([_change("Deployer", before=helm, after=kubevirt)], ["helm", "vms"]),
        ([_change("VirtualMachine", namespace="vm", after=object())], ["vms"]),
        ([_change(TAINTS_KIND)], []),
        ([_change("AddOnPlacementScore")], []),
    ]
    for changes, expected in cases:
        assert list(engine.affected_by(changes, ctx)) == sorted(keys[n] for n in expected)
    engine.track(keys["vms"], None)
    assert list(engine.affected_by([_change("VirtualMachine")], ctx)) == []


def test_hybrid_state_round_trip() -> None:
    driver = play(
        C3,
        [
            ("rule", {"replicas": 1, "advisors": [{"name": "a"}, {"name": "b"}]}, 3, ["c2"]),
            ("post", "a", [{"name": "c1", "score": 30, "kind": "ManagedCluster"}]),
            ("post", "b", ["c2@70"]),
        ],
    )
    state = driver.state
    assert state is not None and state.reductions and state.deadline is not None
    engine = HybridPlacementEngine()
    raw = orjson.loads(orjson.dumps(engine.dump_state(state)))
    assert raw["spec"]["advisors"][0] == {"name": "a"}
    restored = engine.load_state(raw)
    assert restored == state
    assert engine.next_due(restored) == state.deadline


@pytest.mark.parametrize("raw", [{}, {"namespace": "n", "name": "r", "generation": "x", "spec": {}}])
def test_hybrid_unreadable_state(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidStateError):
        HybridPlacementEngine().load_state(raw)


BAD = {"targetLabels": {"matchExpressions": [{"key": "env", "operator": "Near"}]}}


def test_hybrid_invalid_selector_keeps_state_B4() -> None:
    driver = RuleDriver(build_all(C3))
    driver.apply_rule({"replicas": 1, "advisors": [{"name": "a"}]})
    before = driver.state
    step = driver.apply_rule({**BAD, "replicas": 1}, generation=2)
    assert step.state == before and step.emits == ()


def test_hybrid_invalid_selector_on_new_rule_is_seen_but_has_no_round_B4() -> None:
    driver = RuleDriver(build_all(C3))
    step = driver.apply_rule(BAD)
    assert driver.state is not None and driver.state.round == 0
    assert [e.kind for e in step.emits] == ["placementrule.decided"]
    driver.change_inventory([build({"kind": "ManagedCluster", "name": "c9"})])
    assert driver.state.round == 0 and driver.proposals == []


@pytest.mark.parametrize(
    ("second", "expected_round"),
    [({"replicas": 1, "advisors": [{"name": "a"}]}, 1), ({"replicas": 2, "advisors": [{"name": "a"}]}, 2)],
    ids=["same-spec", "changed-spec"],
)
def test_hybrid_generation_zero_counts_spec_changes(second: dict[str, Any], expected_round: int) -> None:
    driver = RuleDriver(build_all(C3))
    driver.apply_rule({"replicas": 1, "advisors": [{"name": "a"}]}, generation=0)
    driver.apply_rule(second, generation=0)
    assert driver.state is not None and driver.state.round == expected_round


def test_hybrid_decided_only_when_set_changes_J2() -> None:
    driver = RuleDriver(build_all(C3))
    driver.apply_rule({"replicas": 1, "advisors": [{"name": "a"}]}, decisions=[{"name": "c1"}])
    driver.post("a", [{"name": "c1"}])
    assert len(driver.decided_events) == 1, "decision c1 was already published on the first evaluation"
    assert labels(driver.decided_events[0].decisions) == ["c1"]


def _record(topic: TopicRole, offset: int, key: str, kind: str, data: Any) -> InputRecord:
    value = encode_event(kind_name=kind, data=data, subject=key, event_id=f"e{offset}", time=T0)
    return InputRecord(topic=topic, partition=0, offset=offset, key=key.encode(), value=value)


def test_hybrid_through_the_runtime_with_restore() -> None:
    settings = EngineSettings(advisor_timeout_seconds=5)
    runtime = Runtime([HybridPlacementEngine()], settings)
    records = [
        _record(TopicRole.CLUSTER_STATUS, i, f"ManagedCluster/{c['name']}", "managedcluster.applied", build(c))
        for i, c in enumerate(C3)
    ]
    key = "PlacementRule/apps/db"
    rule = EVENT_KINDS["placementrule.applied"].data_model.model_validate(
        {
            "metadata": {"name": "db", "namespace": "apps", "generation": 1},
            "spec": {"replicas": 1, "advisors": [{"name": "a"}, {"name": "b"}]},
        }
    )
    records.append(_record(TopicRole.SUBMISSIONS, 10, key, "placementrule.applied", rule))
    out = runtime.process(records, T0)
    by_topic = [(o.topic, o.key) for o in out]
    assert (TopicRole.ADVISOR_REQUESTS, key.encode()) in by_topic
    assert (TopicRole.DECISIONS, key.encode()) in by_topic
    assert runtime.next_timer() == T0 + timedelta(seconds=5)

    posted = EVENT_KINDS["recommendation.posted"].data_model.model_validate(
        {"rule": {"namespace": "apps", "name": "db"}, "round": 1, "advisor": "a", "recommendations": [{"name": "c2"}]}
    )
    runtime.process([_record(TopicRole.ADVISOR_RECOMMENDATIONS, 11, key, "recommendation.posted", posted)], T0)
    fired = runtime.fire_timers(T0 + timedelta(seconds=5))
    decided = [decode_event(o.value, TopicRole.DECISIONS) for o in fired if o.topic is TopicRole.DECISIONS and o.value]
    assert [labels(d.data.decisions) for d in decided] == [["c2"]]  # type: ignore[attr-defined]

    changelog = [o for o in fired if o.topic is TopicRole.CHANGELOG]
    assert changelog
    fresh = Runtime([HybridPlacementEngine()], settings)
    fresh.restore(key, changelog[-1].value)
    assert fresh.states[key] == runtime.states[key]

    # an inventory change reaches the rule through affected_by and resets it (D1/D2)
    new_cluster = _record(
        TopicRole.CLUSTER_STATUS,
        12,
        "ManagedCluster/c4",
        "managedcluster.applied",
        build({"kind": "ManagedCluster", "name": "c4"}),
    )
    out = runtime.process([new_cluster], T0 + timedelta(seconds=6))
    proposals = [
        decode_event(o.value, TopicRole.ADVISOR_REQUESTS)
        for o in out
        if o.topic is TopicRole.ADVISOR_REQUESTS and o.value
    ]
    assert [p.data.round for p in proposals] == [2]  # type: ignore[attr-defined]
    deleted = _record(
        TopicRole.SUBMISSIONS,
        13,
        key,
        "placementrule.deleted",
        EVENT_KINDS["placementrule.deleted"].data_model.model_validate(
            {"metadata": {"name": "db", "namespace": "apps"}}
        ),
    )
    out = runtime.process([deleted], T0 + timedelta(seconds=7))
    decisions = [o for o in out if o.topic is TopicRole.DECISIONS]
    assert decisions[-1].value is None and decisions[0].value is not None
    assert key not in runtime.states and runtime.next_timer() is None


def test_hybrid_errors_and_drops_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="engine.hybrid")
    driver = RuleDriver(build_all(C3))
    driver.apply_rule({"deployerType": "nobody"})
    assert any(r.levelname == "ERROR" and "no Deployer has type 'nobody'" in r.message for r in caplog.records)
    driver.apply_rule(BAD, generation=2)
    assert any(r.levelname == "ERROR" and "invalid targetLabels" in r.message for r in caplog.records)
    caplog.clear()
    driver.post("a", [], 9)
    assert [(r.levelname, "round 9" in r.message) for r in caplog.records] == [("DEBUG", True)]
