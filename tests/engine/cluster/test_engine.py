"""ClusterPlacementEngine: events, follow-ups, timers, indexes, state, explain (spec B2, B3, J4, K, L)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine, explain_placement
from engine.cluster.engine import DISABLE_ANNOTATION
from engine.core import ConfiguredEngine, EngineSettings
from engine.errors import InvalidStateError
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, a_world, one_set_world
from tests.engine.drivers.cluster import (
    _CANARY_GROUP,
    _CPU,
    SIZED,
    THREE,
    Driver,
    _resource_weight,
    clusters,
    data,
    key_of,
    score_of,
)
from topics.codec import decode_event, dump_model, encode_event
from topics.events import ObjectDeleted
from topics.inventory import ClusterTaintsUpdated, Taint
from topics.names import TopicRole
from topics.placement import Placement, PlacementDecided


def test_cluster_engine_identity() -> None:
    assert ClusterPlacementEngine.KIND == "Placement"
    assert frozenset({"placement.applied", "placement.deleted"}) == ClusterPlacementEngine.EVENTS


def test_cluster_engine_first_evaluation_publishes_whole_decision() -> None:
    driver = Driver(one_set_world(*THREE))
    emits = driver.apply(a_placement({"numberOfClusters": 2}, generation=7))
    assert len(emits) == 1
    event = data(emits[0])
    wire = dump_model(event)
    assert PlacementDecided.model_validate(wire) == PlacementDecided.model_validate(wire)
    assert (event.namespace, event.name, event.generation, event.evaluation_time) == ("ns1", "placement1", 7, NOW)
    assert clusters(event) == ["c1", "c2"]
    assert event.number_of_selected_clusters == 2
    assert event.decision_groups == [
        {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["placement1-decision-1"], "clusterCount": 2}
    ]
    assert [(c.type, c.status, c.reason, c.last_transition_time) for c in event.conditions] == [
        ("PlacementMisconfigured", "False", "Succeedconfigured", NOW),
        ("PlacementSatisfied", "True", "AllDecisionsScheduled", NOW),
    ]
    assert event.scores == {"c1": 100, "c2": 100}  # the selected clusters only (K3): c3 passed, not selected
    assert event.warning is None and event.prioritizers is None and event.filtered_by is None
    assert event.passing_scores is None
    assert "prioritizers" not in wire and wire["placementDecisions"][0]["kind"] == "PlacementDecision"
    assert "passingScores" not in wire


def test_cluster_engine_publishes_only_changes() -> None:
    world = one_set_world(*THREE)
    world.with_score("c1", "res", {"s": 10})
    driver = Driver(world)
    spec = {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "res", "scoreName": "s"}}}
            ]
        },
    }
    placement = a_placement(spec)
    key = key_of(placement)
    assert len(driver.apply(placement)) == 1
    assert driver.decide(key) == []
    driver.inventory.apply(score_of("c1", "res", 20), NOW)  # score-only change
    assert driver.decide(key) == []
    assert len(driver.apply(a_placement(spec, generation=2))) == 0  # new generation, same answer


def test_cluster_engine_condition_transition_time_kept_until_flip() -> None:
    driver = Driver(one_set_world(*THREE))
    placement = a_placement({"numberOfClusters": 5})
    driver.apply(placement)
    driver.now = NOW + timedelta(minutes=5)
    event = data(driver.apply(a_placement({"numberOfClusters": 4}))[0])
    by_type = {c.type: c for c in event.conditions}
    assert by_type["PlacementSatisfied"].message == "1 cluster decisions unscheduled"
    assert by_type["PlacementSatisfied"].last_transition_time == NOW
    driver.now = NOW + timedelta(minutes=10)
    event = data(driver.apply(a_placement({"numberOfClusters": 3}))[0])
    by_type = {c.type: c for c in event.conditions}
    assert by_type["PlacementSatisfied"].last_transition_time == driver.now
    assert by_type["PlacementMisconfigured"].last_transition_time == NOW


def test_cluster_engine_follow_up_runs_once_on_changed_decision() -> None:
    driver = Driver(one_set_world(a_cluster("c1"), a_cluster("c2")))
    spec = {
        "numberOfClusters": 1,
        "prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": -1}]},
    }
    emits = driver.apply(a_placement(spec))
    assert [clusters(data(e)) for e in emits] == [["c1"], ["c2"]]
    assert driver.states[key_of(a_placement())].current() == frozenset({"c2"})


def test_cluster_engine_follow_up_when_a_no_select_if_new_cluster_is_dropped() -> None:
    """L5 for NoSelectIfNew: the held cluster c3 passes the first evaluation, which drops it; the follow-up no
    longer lets it pass, and without it the two resource ranges tie b1 and a2, so a2 wins by name."""
    sized = (
        a_cluster("b1").with_resources({"cpu": "4", "memory": "16Gi"}),
        a_cluster("a2").with_resources({"cpu": "8", "memory": "6Gi"}),
        a_cluster("c3").with_resources({"cpu": "1", "memory": "1Gi"}),
    )
    driver = Driver(one_set_world(*sized))
    resources = [_resource_weight("ResourceAllocatableCPU"), _resource_weight("ResourceAllocatableMemory")]
    policy = {"prioritizerPolicy": {"mode": "Exact", "configurations": resources}}
    driver.apply(a_placement({"numberOfClusters": 3, **policy}))
    taint = ClusterTaintsUpdated(cluster="c3", taints=[Taint(key="k", effect="NoSelectIfNew")])
    driver.inventory.apply(taint, NOW)
    emits = driver.apply(a_placement({"numberOfClusters": 1, **policy}, generation=2))
    assert [clusters(data(e)) for e in emits] == [["b1"], ["a2"]]


def test_cluster_engine_deletion_publishes_deleted_then_tombstone() -> None:
    driver = Driver(one_set_world(*THREE))
    placement = a_placement()
    driver.apply(placement)
    key = key_of(placement)
    gone = ObjectDeleted.model_validate({"metadata": {"name": "placement1", "namespace": "ns1"}})
    raw = encode_event(kind_name="placement.deleted", data=gone, subject=key, event_id="d", time=NOW)
    step = driver.engine.on_event(key, driver.states[key], decode_event(raw, TopicRole.SUBMISSIONS), driver.ctx())
    assert step.state is None
    final, tombstone = step.emits
    assert data(final).deleted and data(final).placement_decisions == [] and data(final).decision_groups == []
    assert (tombstone.kind, tombstone.data) == (None, None)
    assert driver.engine.on_deleted(key, None, driver.ctx()).emits == ()
    assert len(driver.engine.on_deleted(key, driver.states[key], driver.ctx()).emits) == 2


@pytest.mark.parametrize(
    "metadata",
    [{"annotations": {DISABLE_ANNOTATION: "true"}}, {"deletionTimestamp": "2021-12-31T00:00:00Z"}],
    ids=["B3-disabled", "B2-being-deleted"],
)
def test_cluster_engine_skips_disabled_and_deleting(metadata: dict[str, Any]) -> None:
    driver = Driver(one_set_world(*THREE))
    driver.apply(a_placement({"numberOfClusters": 1}))
    raw = {"metadata": {"name": "placement1", "namespace": "ns1", **metadata}, "spec": {"numberOfClusters": 3}}
    assert driver.apply(Placement.model_validate(raw)) == []
    state = driver.states[key_of(a_placement())]
    assert state.current() == frozenset({"c1"})
    assert driver.engine.next_due(state) is None


def test_cluster_engine_disable_annotation_must_be_exactly_true() -> None:
    driver = Driver(one_set_world(*THREE))
    assert len(driver.apply(a_placement(annotations={DISABLE_ANNOTATION: "True"}))) == 1


def test_cluster_engine_state_round_trip() -> None:
    world = one_set_world(*THREE)
    world.with_score("c1", "res", {"s": 1}, valid_until="2021-01-01T00:00:00Z")
    driver = Driver(world)
    spec = {
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "res", "scoreName": "s"}}}
            ]
        }
    }
    placement = a_placement(spec)
    driver.apply(placement)
    state = driver.states[key_of(placement)]
    raw = orjson.loads(orjson.dumps(driver.engine.dump_state(state)))
    assert driver.engine.load_state(raw) == state
    fresh = ClusterPlacementEngine()
    assert fresh.decide(key_of(placement), fresh.load_state(raw), driver.ctx()).emits == ()
    with pytest.raises(InvalidStateError):
        driver.engine.load_state({"placement": {"metadata": {}}})


_BAD_GROUP = {
    "groupName": "bad",
    "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Nope"}]}},
}


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"numberOfClusters": 2, "prioritizerPolicy": {"mode": "Exact", "configurations": [_CPU]}},
        {"decisionStrategy": {"groupStrategy": {"decisionGroups": [_CANARY_GROUP, _BAD_GROUP]}}},
        {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "ten"}}},
    ],
    ids=["everything", "ranked-not-name-order", "group-error-keeps-some", "group-error-keeps-none"],
)
def test_cluster_engine_kept_decision_ids_are_the_published_clusters(spec: dict[str, Any]) -> None:
    """Balance and Steady read the published decision as fleet ids kept from the evaluation that made it: they
    must be exactly the published clusters, ascending, also when ranking or a group error leaves the pages
    different from the selection."""
    driver = Driver(one_set_world(*SIZED))
    placement = a_placement(spec)
    fleet = driver.engine.view(driver.inventory).fleet()
    for generation in (1, 2):  # a first decision, then a re-decision that reads the kept ids
        driver.apply(
            placement.model_copy(update={"metadata": placement.metadata.model_copy(update={"generation": generation})})
        )
        published = driver.states[key_of(placement)].published
        assert published is not None
        expected = sorted(fleet.position[name] for name in published.decided)
        assert published.decided_ids(fleet).tolist() == expected


@pytest.mark.parametrize(
    "specs",
    [
        [{"numberOfClusters": 1}],
        [{"numberOfClusters": 1}, {"numberOfClusters": 2}],
        [{"numberOfClusters": 1}, {"numberOfClusters": 2}, {"numberOfClusters": 1}],
    ],
    ids=["applied", "updated", "updated-back"],
)
def test_cluster_engine_state_json_follows_the_latest_spec(specs: list[dict[str, Any]]) -> None:
    """The changelog entry carries the latest Placement: each update is written anew, and a new placement
    with a deleted one's name carries its own spec."""
    driver = Driver(one_set_world(*THREE))
    for generation, spec in enumerate(specs, start=1):
        placement = a_placement(spec, generation=generation)
        driver.apply(placement)
        state = driver.states[key_of(placement)]
        assert orjson.loads(orjson.dumps(driver.engine.dump_state(state)))["placement"] == dump_model(placement)
    key = key_of(placement)
    driver.engine.track(key, None)
    again = a_placement({"numberOfClusters": 3}, generation=1)
    driver.states.pop(key)
    driver.apply(again)
    assert orjson.loads(orjson.dumps(driver.engine.dump_state(driver.states[key])))["placement"] == dump_model(again)


def test_cluster_engine_explain_in_event_and_function() -> None:
    world = one_set_world(
        a_cluster("c1").with_labels(env="prod"),
        a_cluster("c2"),
        a_cluster("c3").with_labels(env="prod").with_taint("k"),
    )
    placement = a_placement(
        {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}
    )
    key = key_of(placement)
    driver = Driver(world, settings=EngineSettings(explain=frozenset({key})))
    event = data(driver.apply(placement)[0])
    assert event.filtered_by == {"c2": "Predicate", "c3": "TaintToleration"}
    assert event.prioritizers == [
        {"name": "Balance", "weight": 1, "scores": {"c1": 100}},
        {"name": "Steady", "weight": 1, "scores": {"c1": 0}},
    ]
    doc = explain_placement(key, driver.states[key], driver.ctx())
    assert doc["filteredPipelineResults"] == [
        {"name": "Predicate", "filteredClusters": ["c1", "c3"]},
        {"name": "Predicate,TaintToleration", "filteredClusters": ["c1"]},
    ]
    assert doc["passingScores"] == {"c1": 200}
    assert doc["prioritizeResults"][1] == {"name": "Steady", "weight": 1, "scores": {"c1": 100}}
    assert driver.engine.explain(key, driver.states[key], driver.ctx())["selected"] == ["c1"]


@pytest.mark.parametrize("explained", [False, True])
def test_cluster_engine_passing_scores_are_explain_data(explained: bool) -> None:
    """K3/K4: the decision carries the selected clusters' totals; every passing cluster's total only with explain,
    where the explain document ranks them."""
    world = one_set_world(*SIZED)
    placement = a_placement({"numberOfClusters": 2, "prioritizerPolicy": {"configurations": [_CPU]}})
    key = key_of(placement)
    driver = Driver(world, settings=EngineSettings(explain=frozenset({key}) if explained else frozenset()))
    event = data(driver.apply(placement)[0])
    # Balance 100 + Steady 0 + CPU 4, 16, 8, 32 cores normalised to -100..100, truncated (F4)
    passing = {"c1": 0, "c2": 86, "c3": 29, "c4": 200}
    assert clusters(event) == ["c2", "c4"]
    assert event.scores == {"c2": 86, "c4": 200}
    assert event.passing_scores == (passing if explained else None)
    assert ("passingScores" in dump_model(event)) is explained
    doc = driver.engine.explain(key, driver.states[key], driver.ctx())  # now Steady gives c2 and c4 100 more
    assert list(doc["passingScores"].items()) == [("c4", 300), ("c2", 186), ("c3", 29), ("c1", 0)]


def test_cluster_engine_misconfigured_publishes_one_empty_page() -> None:
    driver = Driver(one_set_world(*THREE))
    driver.apply(a_placement())
    event = data(driver.apply(a_placement({"prioritizerPolicy": {"mode": "Bad"}}))[0])
    assert [p["metadata"]["name"] for p in event.placement_decisions] == ["placement1-decision-1"]
    assert clusters(event) == [] and event.scores == {}
    assert event.conditions[0].message == ":incorrect prioritizer policy mode: Bad"


def test_cluster_engine_unknown_set_selector_publishes_nothing() -> None:
    world = (
        a_world().with_clusters(a_cluster("c1")).with_set("odd", {"selectorType": "Weird"}).with_binding("ns1", "odd")
    )
    driver = Driver(world)
    assert driver.apply(a_placement()) == []
    assert driver.engine.next_due(driver.states[key_of(a_placement())]) == NOW + timedelta(seconds=600)


def test_cluster_engine_is_not_configured_by_files() -> None:
    """A queue configuration reload never reaches cluster placements: the engine has no configuration."""
    assert not isinstance(Driver(one_set_world(*THREE)).engine, ConfiguredEngine)
