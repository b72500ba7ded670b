"""The cluster placement changelog: the Placement and its decision as two entries, through the Runtime."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.cluster.tracking.state import (
    DECISION_PART,
    PlacementState,
    dump_placement_state,
    load_placement_part,
    peer_decided,
    placement_state_changes,
)
from engine.errors import InvalidStateError
from engine.runtime import InputRecord, OutputRecord, Runtime
from topics.codec import dump_model
from topics.interning import Interning
from topics.names import TopicRole
from topics.placement import Placement

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEY = "Placement/apps/web"
DECISION_KEY = f"{KEY}/{DECISION_PART}"
_offsets: dict[TopicRole, int] = {}


def _event(kind: str, data: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"id-{kind}", "source": "/test", "type": f"{kind}.v1", "data": data}


def _record(topic: TopicRole, key: str, value: dict[str, Any] | None) -> InputRecord:
    offset = _offsets[topic] = _offsets.get(topic, -1) + 1
    body = None if value is None else orjson.dumps(value)
    return InputRecord(topic, 0, offset, key.encode(), body, T0, topic.value)


def _inventory(*clusters: str) -> list[InputRecord]:
    status = TopicRole.CLUSTER_STATUS
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    records = [
        _record(status, "ManagedClusterSet/prod", _event("managedclusterset.applied", {"metadata": {"name": "prod"}})),
        _record(status, "ManagedClusterSetBinding/apps/prod", _event("managedclustersetbinding.applied", binding)),
    ]
    for name in clusters:
        labels = {"cluster.open-cluster-management.io/clusterset": "prod"}
        data = {"metadata": {"name": name, "labels": labels}}
        records.append(_record(status, f"ManagedCluster/{name}", _event("managedcluster.applied", data)))
    return records


def _placement(clusters: int | None = None, generation: int = 1) -> InputRecord:
    spec = {} if clusters is None else {"numberOfClusters": clusters}
    metadata = {"name": "web", "namespace": "apps", "generation": generation}
    return _record(TopicRole.SUBMISSIONS, KEY, _event("placement.applied", {"metadata": metadata, "spec": spec}))


def _taint(cluster: str, effect: str | None) -> InputRecord:
    taints = [] if effect is None else [{"key": "k", "effect": effect}]
    return _record(TopicRole.TAINTS, cluster, _event("cluster.taints.updated", {"cluster": cluster, "taints": taints}))


def _deleted() -> InputRecord:
    data = {"metadata": {"name": "web", "namespace": "apps"}}
    return _record(TopicRole.SUBMISSIONS, KEY, _event("placement.deleted", data))


def _changelog(outputs: list[OutputRecord]) -> list[OutputRecord]:
    return [o for o in outputs if o.topic is TopicRole.CHANGELOG]


def _keys(outputs: list[OutputRecord]) -> list[tuple[str, bool]]:
    """(record key, whether it is a tombstone) of each changelog record."""
    return [(o.key.decode(), o.value is None) for o in _changelog(outputs) if o.key is not None]


def _restored(entries: list[OutputRecord]) -> dict[str, Any]:
    fresh = Runtime([ClusterPlacementEngine()])
    for entry in entries:
        assert entry.key is not None
        fresh.restore(entry.key.decode(), entry.value)
    return fresh.states


@pytest.fixture
def runtime() -> Runtime:
    live = Runtime([ClusterPlacementEngine()])
    live.process(_inventory("c1", "c2", "c3"), T0)
    return live


@pytest.mark.parametrize(
    ("steps", "written"),
    [
        ([], [(KEY, False), (DECISION_KEY, False)]),
        ([_taint("c2", "NoSelect")], [(DECISION_KEY, False)]),
        ([_taint("c2", "PreferNoSelect")], []),  # the answer stays: nothing is written
        ([_placement(clusters=1, generation=2)], [(KEY, False), (DECISION_KEY, False)]),
        # the same spec again: the runtime drops the Placement entry with the same bytes, its decision follows
        ([_placement()], [(DECISION_KEY, False)]),
        ([_deleted()], [(KEY, True), (DECISION_KEY, True)]),
    ],
    ids=["new", "re-decided", "unchanged", "updated", "re-applied", "deleted"],
)
def test_a_change_writes_only_the_entries_it_changed(
    runtime: Runtime, steps: list[InputRecord], written: list[tuple[str, bool]]
) -> None:
    first = runtime.process([_placement()], T0)
    outputs = first if not steps else runtime.process(steps, T0 + timedelta(seconds=1))
    assert _keys(outputs) == written


def test_the_entries_restore_the_state_in_order_and_after_compaction(runtime: Runtime) -> None:
    log = _changelog(runtime.process([_placement()], T0))
    log += _changelog(runtime.process([_taint("c2", "NoSelect")], T0 + timedelta(seconds=1)))
    log += _changelog(runtime.process([_placement(clusters=1, generation=2)], T0 + timedelta(seconds=2)))
    log += _changelog(runtime.process([_taint("c1", "NoSelect")], T0 + timedelta(seconds=3)))
    state = runtime.states[KEY]
    assert isinstance(state, PlacementState) and state.published is not None
    assert state.placement.spec.number_of_clusters == 1 and state.current() == {"c3"}
    assert _restored(log) == {KEY: state}  # the whole log
    latest = {o.key: o for o in log}
    assert _restored(list(latest.values())) == {KEY: state}  # compacted: the last entry per key, in log order
    # compacted only in part: an old decision before the newest Placement, with no Placement before it
    oldest_decision = next(o for o in log if o.key == DECISION_KEY.encode())
    assert _restored([oldest_decision, *latest.values()]) == {KEY: state}


def test_a_decision_entry_before_any_placement_is_skipped() -> None:
    assert load_placement_part(None, DECISION_PART, {"published": None, "due": None}, Interning()) is None


def test_deletion_tombstones_remove_the_restored_state(runtime: Runtime) -> None:
    log = _changelog(runtime.process([_placement()], T0))
    log += _changelog(runtime.process([_deleted()], T0 + timedelta(seconds=1)))
    assert _restored(log) == {}
    written = [o for o in log if o.value is not None]
    assert _restored(written)[KEY].published is not None
    tombstone = [o for o in log if o.key == DECISION_KEY.encode() and o.value is None]
    restored = _restored(written + tombstone)[KEY]  # a decision tombstone alone clears the decision
    assert restored.published is None and restored.due is None


def test_state_changes_follow_every_placement_entry_with_a_decision_entry(runtime: Runtime) -> None:
    runtime.process([_placement()], T0)
    state = runtime.states[KEY]
    assert isinstance(state, PlacementState)
    due = T0 + timedelta(hours=1)
    respecified = replace(state, placement=state.placement.model_copy())  # same decision object
    cases = [
        (None, state, ["", DECISION_PART]),
        (state, state, []),
        (state, replace(state, due=due), [DECISION_PART]),
        (state, respecified, ["", DECISION_PART]),
        (state, None, ["", DECISION_PART]),
    ]
    for old, new, parts in cases:
        changes = placement_state_changes(old, new, runtime.interning)
        assert [part for part, _ in changes] == parts
        assert all((raw is None) == (new is None) for _, raw in changes)


def test_a_placement_entry_keeps_the_decision_restored_before_it(runtime: Runtime) -> None:
    runtime.process([_placement()], T0)
    state = runtime.states[KEY]
    assert isinstance(state, PlacementState) and state.published is not None
    raw = orjson.loads(orjson.dumps(placement_state_changes(None, state, runtime.interning)[0][1]))
    updated = load_placement_part(state, "", raw, runtime.interning)
    assert updated is not None and updated.published is state.published and updated.due == state.due
    assert updated.placement == state.placement and updated.placement is not state.placement


def test_a_whole_state_entry_from_before_the_parts_is_read_and_later_parts_apply(runtime: Runtime) -> None:
    runtime.process([_placement()], T0)
    before = runtime.states[KEY]
    whole = OutputRecord(
        TopicRole.CHANGELOG,
        KEY.encode(),
        orjson.dumps({"kind": "Placement", "v": 1, "state": dump_placement_state(before, runtime.interning)}),
        subject=KEY,
    )
    assert _restored([whole]) == {KEY: before}
    later = _changelog(runtime.process([_taint("c2", "NoSelect")], T0 + timedelta(seconds=1)))
    assert _keys(later) == [(DECISION_KEY, False)]
    restored = _restored([whole, *later])[KEY]
    assert restored == runtime.states[KEY] and restored.current() == {"c1", "c3"}


@pytest.mark.parametrize(
    ("part", "raw"),
    [
        ("pages", {}),
        (DECISION_PART, {"published": {"pages": "nope"}}),
        (DECISION_PART, {"published": None, "due": "yesterday"}),
        ("", {"placement": {"metadata": {}}}),
        ("", {"spec": {}}),
        (
            DECISION_PART,
            {
                "published": {
                    "pages": [["web-decision-1", "", 0, [1]]],
                    "selected": 1,
                    "conditions": [],
                    "evaluationTime": "2026-01-01T00:00:00Z",
                }
            },
        ),
    ],
    ids=["unknown-part", "bad-pages", "bad-due", "bad-placement", "no-placement", "non-string-cluster"],
)
def test_unreadable_entries_are_refused(runtime: Runtime, part: str, raw: dict[str, Any]) -> None:
    runtime.process([_placement()], T0)
    with pytest.raises(InvalidStateError):
        load_placement_part(runtime.states[KEY], part, raw, runtime.interning)


def test_restored_decisions_share_their_conditions_pages_and_names(runtime: Runtime) -> None:
    decision = next(o for o in _changelog(runtime.process([_placement()], T0)) if o.key == DECISION_KEY.encode())
    state = runtime.states[KEY]
    assert decision.value is not None

    def restored() -> PlacementState:
        raw = orjson.loads(decision.value or b"")["state"]  # new strings and dicts, as read from Kafka
        loaded = load_placement_part(state, DECISION_PART, raw, runtime.interning)
        assert loaded is not None and loaded.published is not None
        return loaded

    first, second = restored(), restored()
    assert first == second and first.published is not None and second.published is not None
    assert first.published.conditions[0] is second.published.conditions[0]
    assert first.published.pages[0].clusters is second.published.pages[0].clusters
    assert first.published.decided is second.published.decided


def test_placements_with_equal_specs_share_one_compiled_spec() -> None:
    interning = Interning()
    engine = ClusterPlacementEngine()
    engine.use_interning(interning)

    def compiled(name: str, clusters: int) -> object:
        data = {"metadata": {"name": name, "namespace": "apps"}, "spec": {"numberOfClusters": clusters}}
        return engine.compiled(f"Placement/apps/{name}", Placement.model_validate(data, context=interning))

    assert compiled("a", 2) is compiled("b", 2)
    assert compiled("a", 2) is not compiled("a", 3)


@pytest.mark.parametrize(
    "raw",
    [
        {"metadata": {"name": "web", "namespace": "apps"}},
        {
            "metadata": {"name": "web", "namespace": "apps", "labels": {"a": "b"}, "generation": 3},
            "spec": {"numberOfClusters": 2, "clusterSets": ["s"], "spreadPolicy": {"x": 1}, "unknown": [1]},
            "status": {"kept": True},
            "zzz": "after the spec",
        },
    ],
    ids=["bare", "unknown-fields"],
)
def test_cluster_placement_entry_is_the_model_dump_whatever_shares_its_spec(raw: dict[str, Any]) -> None:
    """The Placement entry reuses its spec's JSON across Placements sharing the spec, byte for byte the dump."""
    interning = Interning()
    for name in ("web", "api"):  # the second shares the first's spec object
        data = {**raw, "metadata": {**raw["metadata"], "name": name}}
        placement = Placement.model_validate(data, context=interning)
        entry = dump_placement_state(PlacementState(placement), interning)["placement"]
        assert orjson.dumps(entry) == orjson.dumps(dump_model(placement))


_CONDITIONS = (
    '[{"type":"PlacementMisconfigured","status":"False","reason":"Succeedconfigured","message":"Placement '
    'configurations check pass","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"PlacementSatisfied",'
    '"status":"True","reason":"AllDecisionsScheduled","message":"All cluster decisions scheduled",'
    '"lastTransitionTime":"2026-01-01T00:00:00Z"}]'
)
_OLD_DECISION = (
    b'{"kind":"Placement","v":1,"state":{"published":{"pages":[["web-decision-1","",0,["c1","c3"]]],"selected":2,'
    b'"conditions":' + _CONDITIONS.encode() + b',"warning":null,"generation":1,"evaluationTime":'
    b'"2026-01-01T00:00:01+00:00"},"due":"2026-01-01T00:10:01+00:00"}}'
)
"""A decision entry as written before pages were packed, after the `re-decided` step's taint."""


@pytest.mark.parametrize(
    "entry",
    [_OLD_DECISION, _OLD_DECISION.replace(b'"pages"', b'"packedPages"').replace(b'["c1","c3"]', b'"c","1,3"')],
    ids=["pages-as-written-before", "packed"],
)
def test_decision_entries_of_either_format_restore_the_same_state(runtime: Runtime, entry: bytes) -> None:
    log = _changelog(runtime.process([_placement()], T0))
    log += _changelog(runtime.process([_taint("c2", "NoSelect")], T0 + timedelta(seconds=1)))
    written = log[-1]
    assert written.key == DECISION_KEY.encode() and written.value is not None
    assert orjson.loads(written.value)["state"]["published"]["packedPages"] == [["web-decision-1", "", 0, "c", "1,3"]]
    old = OutputRecord(TopicRole.CHANGELOG, DECISION_KEY.encode(), entry, subject=KEY)
    assert _restored([log[0], old]) == _restored([log[0], written]) == {KEY: runtime.states[KEY]}


@pytest.mark.parametrize(
    ("clusters", "packed"),
    [
        ((), ["", []]),
        (("c1",), ["c1", ""]),
        (("cluster-0002", "cluster-0006", "cluster-0010"), ["cluster-00", "02,06,10"]),
        (("ab", "abc", "abd"), ["ab", ",c,d"]),  # a name that is the whole prefix
        (("ab-ab", "ab-cd", "ab-ab-ab"), ["ab-", "ab,cd,ab-ab"]),  # the prefix again within names
        (("xa", "b", "xb"), ["", "xa,b,xb"]),  # not in name order: the ends share more than the names
        (("x", "y"), ["", "x,y"]),
        (("a,b", "c,d"), ["", ["a,b", "c,d"]]),  # a comma in a name: the names as they are
        (("a,b", "a,c"), ["", ["a,b", "a,c"]]),  # in the prefix too
        (("ab", "ab,ab"), ["", ["ab", "ab,ab"]]),
        (("", "b"), ["", ",b"]),
        (("zoné-1", "zoné-2"), ["zoné-", "1,2"]),
    ],
    ids=[
        "empty",
        "one",
        "numbered",
        "prefix-is-a-name",
        "prefix-within-names",
        "not-in-name-order",
        "no-prefix",
        "comma",
        "comma-in-prefix",
        "comma-then-prefix",
        "empty-name",
        "non-ascii",
    ],
)
def test_packed_pages_restore_their_clusters(runtime: Runtime, clusters: tuple[str, ...], packed: list[Any]) -> None:
    runtime.process([_placement()], T0)
    state = runtime.states[KEY]
    assert isinstance(state, PlacementState) and state.published is not None
    page = replace(state.published.pages[0], clusters=clusters)
    published = replace(state.published, pages=(page,))
    decision = placement_state_changes(state, replace(state, published=published), runtime.interning)[-1][1]
    raw = orjson.loads(orjson.dumps(decision))
    assert raw["published"]["packedPages"] == [[page.name, page.group_name, page.group_index, *packed]]
    loaded = load_placement_part(state, DECISION_PART, raw, runtime.interning)
    assert loaded is not None and loaded.published is not None
    assert loaded.published.pages == (page,) and loaded.current() == frozenset(clusters)
    assert peer_decided(DECISION_PART, raw, runtime.interning) == frozenset(clusters)


@pytest.mark.parametrize(
    "packed",
    [[["p", "", 0, 1, "a"]], [["p", "", 0, "c", 7]], [["p", "", 0, "c", [1]]], [["p", "", 0, "c"]]],
    ids=["prefix-not-a-string", "rest-not-a-string", "not-string-names", "no-rest"],
)
def test_unreadable_packed_pages_are_refused(runtime: Runtime, packed: list[Any]) -> None:
    runtime.process([_placement()], T0)
    raw = {"published": {"packedPages": packed, "selected": 1, "conditions": [], "evaluationTime": "2026-01-01"}}
    with pytest.raises(InvalidStateError):
        load_placement_part(runtime.states[KEY], DECISION_PART, raw, runtime.interning)


_BEFORE_K3 = [
    (
        KEY,
        b'{"kind":"Placement","v":1,"state":{"placement":{"apiVersion":"cluster.open-cluster-management.io/v1beta1",'
        b'"kind":"Placement","metadata":{"name":"web","namespace":"apps","labels":{},"annotations":{},"generation":1},'
        b'"spec":{"clusterSets":[],"numberOfClusters":1,"predicates":[],"prioritizerPolicy":{"mode":"Additive",'
        b'"configurations":[]},"tolerations":[],"decisionStrategy":{"groupStrategy":{"decisionGroups":[],'
        b'"clustersPerDecisionGroup":"100%"}}}}}}',
    ),
    (
        DECISION_KEY,
        b'{"kind":"Placement","v":1,"state":{"published":{"packedPages":[["web-decision-1","",0,"c1",""]],"selected":1,'
        b'"conditions":' + _CONDITIONS.encode() + b',"warning":null,"generation":1,"evaluationTime":'
        b'"2026-01-01T00:00:00+00:00"},"due":"2026-01-01T00:10:00+00:00"}}',
    ),
]
"""The entries of `numberOfClusters: 1` over c1..c3 as the version whose events carried every passing cluster's
score wrote them (its event said `"scores":{"c1":100,"c2":100,"c3":100}`)."""


def _decided(outputs: list[OutputRecord]) -> list[dict[str, Any]]:
    return [orjson.loads(o.value)["data"] for o in outputs if o.topic is TopicRole.DECISIONS and o.value]


def test_an_entry_from_before_selected_only_scores_restores_and_republishes_nothing() -> None:
    """Upgrade (K3): the restored decision is the same answer, so re-deciding it publishes nothing (scores alone
    never publish, K2); the next changed answer carries the selected cluster's score only."""
    fresh = Runtime([ClusterPlacementEngine()])
    fresh.process(_inventory("c1", "c2", "c3"), T0)
    for key, entry in _BEFORE_K3:
        fresh.restore(key, entry)
    assert _decided(fresh.redecide([KEY], T0 + timedelta(seconds=1))) == []
    (changed,) = _decided(fresh.process([_taint("c1", "NoSelect")], T0 + timedelta(seconds=2)))
    assert [d["clusterName"] for d in changed["placementDecisions"][0]["status"]["decisions"]] == ["c2"]
    assert changed["scores"] == {"c2": 100}  # Balance 100, Steady 0: c1 held it; c3 passed, not selected
    assert "passingScores" not in changed
