"""Balance across instances (F2 counts every other placement): each instance follows the changelog entries of the
placements other instances own, through the Runtime as the service drives it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.cluster.tracking.state import DECISION_PART, peer_decided
from engine.errors import InvalidStateError
from engine.runtime import InputRecord, OutputRecord, Runtime
from topics.interning import Interning
from topics.names import TopicRole

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _event(kind: str, data: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"id-{kind}", "source": "/test", "type": f"{kind}.v1", "data": data}


def _record(topic: TopicRole, key: str, value: dict[str, Any]) -> InputRecord:
    return InputRecord(topic, 0, 0, key.encode(), orjson.dumps(value), T0, topic.value)


def _instance() -> Runtime:
    """A runtime over clusters c1 and c2 of set prod, bound to namespace apps."""
    status = TopicRole.CLUSTER_STATUS
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    records = [
        _record(status, "ManagedClusterSet/prod", _event("managedclusterset.applied", {"metadata": {"name": "prod"}})),
        _record(status, "ManagedClusterSetBinding/apps/prod", _event("managedclustersetbinding.applied", binding)),
    ]
    for name in ("c1", "c2"):
        data = {"metadata": {"name": name, "labels": {"cluster.open-cluster-management.io/clusterset": "prod"}}}
        records.append(_record(status, f"ManagedCluster/{name}", _event("managedcluster.applied", data)))
    runtime = Runtime([ClusterPlacementEngine()])
    runtime.process(records, T0)
    return runtime


def _apply(name: str) -> InputRecord:
    """Placement apps/<name> asking for one cluster (default prioritizers: Balance and Steady)."""
    data = {"metadata": {"name": name, "namespace": "apps", "generation": 1}, "spec": {"numberOfClusters": 1}}
    return _record(TopicRole.SUBMISSIONS, f"Placement/apps/{name}", _event("placement.applied", data))


def _decided(outputs: list[OutputRecord]) -> dict[str, list[str]]:
    found = {}
    for o in outputs:
        if o.topic is TopicRole.DECISIONS and o.key is not None and o.value is not None:
            pages = orjson.loads(o.value)["data"]["placementDecisions"]
            found[o.key.decode()] = [d["clusterName"] for p in pages for d in p["status"]["decisions"]]
    return found


def _changelog(outputs: list[OutputRecord]) -> list[tuple[str, bytes | None]]:
    return [(o.key.decode(), o.value) for o in outputs if o.topic is TopicRole.CHANGELOG and o.key is not None]


def _counts(runtime: Runtime) -> dict[str, int]:
    engine = runtime.engine_for("Placement/apps/x")
    assert isinstance(engine, ClusterPlacementEngine)
    return engine.decided_counts()


@pytest.mark.parametrize(("follows_peers", "expected"), [(True, ["c2"]), (False, ["c1"])])
def test_balance_counts_a_placement_another_instance_owns(follows_peers: bool, expected: list[str]) -> None:
    """Instance B places apps/api on c1. Following B's changelog, instance A's Balance gives c1 -100 and places
    apps/web on c2; without it, A sees no other decision and both clusters tie (name order picks c1)."""
    b, a = _instance(), _instance()
    outputs = b.process([_apply("api")], T0)
    assert _decided(outputs) == {"Placement/apps/api": ["c1"]}
    if follows_peers:
        for key, value in _changelog(outputs):
            a.observe_peer(key, value)
    assert _decided(a.process([_apply("web")], T0)) == {"Placement/apps/web": expected}


def test_a_placement_counts_once_whichever_instance_owns_it() -> None:
    """A restored placement replaces what was followed of it (adopt, then restore); giving it up (forget) hands
    its decision back to the peers' view, and a later entry of its new owner replaces that."""
    b, a = _instance(), _instance()
    entries = _changelog(b.process([_apply("api")], T0))
    for key, value in entries:
        a.observe_peer(key, value)
    assert _counts(a) == {"c1": 1}

    a.adopt(lambda key: key == "Placement/apps/api")
    assert _counts(a) == {}
    for key, value in entries:
        a.restore(key, value)
    assert "Placement/apps/api" in a.states
    assert _counts(a) == {"c1": 1}
    a.observe_peer(f"Placement/apps/api/{DECISION_PART}", None)  # an owned subject's entries are not followed
    assert _counts(a) == {"c1": 1}

    a.forget(["Placement/apps/api"])
    assert "Placement/apps/api" not in a.states
    assert _counts(a) == {"c1": 1}
    moved = {"published": {"pages": [["api-decision-1", "", 0, ["c2"]]]}, "due": None}
    a.observe_peer(f"Placement/apps/api/{DECISION_PART}", orjson.dumps({"state": moved}))
    assert _counts(a) == {"c2": 1}
    a.observe_peer("Placement/apps/api", None)  # deleted by its owner
    assert _counts(a) == {}


@pytest.mark.parametrize(
    ("part", "raw", "expected"),
    [
        (
            DECISION_PART,
            {"published": {"pages": [["p-1", "", 0, ["c1", "c2"]], ["p-2", "", 0, ["c3"]]]}},
            {"c1", "c2", "c3"},
        ),
        (DECISION_PART, {"published": None, "due": None}, set()),
        (DECISION_PART, None, set()),
        ("", None, set()),  # the placement is gone
        ("", {"placement": {"metadata": {"name": "web"}}}, None),  # the spec alone says nothing of the decision
        ("", {"placement": {}, "published": {"pages": [["p-1", "", 0, ["c1"]]]}}, {"c1"}),  # a whole-state entry
    ],
)
def test_peer_decided_reads_the_clusters_of_a_decision_entry(
    part: str, raw: dict[str, Any] | None, expected: set[str] | None
) -> None:
    assert peer_decided(part, raw, Interning()) == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize(
    ("part", "raw"),
    [
        ("other", {"published": None}),
        (DECISION_PART, {"due": None}),
        (DECISION_PART, {"published": {"pages": 7}}),
        (DECISION_PART, {"published": {"pages": [["p-1"]]}}),
    ],
)
def test_unreadable_peer_entries_are_refused(part: str, raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidStateError):
        peer_decided(part, raw, Interning())
    runtime = _instance()
    with pytest.raises(InvalidStateError):
        runtime.observe_peer(f"Placement/apps/web/{part}", orjson.dumps({"state": raw}))
