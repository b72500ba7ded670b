"""Decision groups and PlacementDecision pages (spec H, I)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from engine.cluster.pipeline.groups import group_length
from engine.cluster.tracking.events import group_statuses, page_objects
from engine.cluster.tracking.state import DECISION_PART
from engine.runtime import InputRecord, OutputRecord, Runtime
from tests.engine.cluster.cluster_builders import a_cluster, a_placement, condition, decided, one_set_world, run
from topics.codec import decode_event, dump_model
from topics.interning import Interning
from topics.names import TopicRole
from topics.placement import PlacementDecided


@pytest.mark.parametrize(
    ("raw", "total", "length"),
    [
        (3, 10, 3),
        ("3", 10, 3),
        ("25%", 3, 1),
        ("100%", 7, 7),
        ("7%", 100, 8),
        ("14%", 50, 8),
        ("14%", 100, 15),
        ("28%", 25, 8),
        ("17%", 300, 52),
        ("50%", 5, 3),
        (0, 5, 5),
        (-1, 5, 5),
        (20, 5, 5),
        ("0%", 5, 5),
        ("1e1%", 30, 3),
        ("inf%", 4, 4),
        ("1e400%", 4, 4),
        ("-50%", 4, 4),
        ("2.5%", 200, 5),
    ],
)
def test_cluster_group_length(raw: int | str, total: int, length: int) -> None:
    assert group_length(raw, total) == (length, group_length(raw, total)[1])
    assert not group_length(raw, total)[1].failed


@pytest.mark.parametrize("raw", ["abc", "%", "x%", "1_0%", " 5%", "5 %", "3.5"])
def test_cluster_group_length_invalid(raw: str) -> None:
    _, status = group_length(raw, 10)
    assert status.failed
    assert status.condition_message() == f":{raw} invalid type: string is not a percentage"


def test_cluster_seven_percent_quirk_makes_thirteen_groups() -> None:
    clusters = [a_cluster(f"c{i:03d}") for i in range(100)]
    spec = {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "7%"}}}
    result = run(one_set_world(*clusters), a_placement(spec))
    assert [len(g.clusters) for g in result.groups] == [8] * 12 + [4]
    assert [g.index for g in result.groups] == list(range(13))


def _group(
    name: str, labels: dict[str, str] | None = None, claims: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if labels is not None:
        selector["labelSelector"] = {"matchLabels": labels}
    if claims is not None:
        selector["claimSelector"] = {"matchExpressions": claims}
    return {"groupName": name, "groupClusterSelector": selector}


GROUPED = (
    a_cluster("c1").with_labels(tier="canary"),
    a_cluster("c2").with_labels(tier="canary", cloud="Azure"),
    a_cluster("c3").with_labels(cloud="Azure").with_claims(region="eu"),
    a_cluster("c4"),
    a_cluster("c5").with_claims(region="eu"),
)


def _strategy(groups: list[dict[str, Any]], per_group: int | str = "100%") -> dict[str, Any]:
    return {"decisionStrategy": {"groupStrategy": {"decisionGroups": groups, "clustersPerDecisionGroup": per_group}}}


def test_cluster_predefined_groups_first_match_and_chunks() -> None:
    spec = _strategy(
        [
            _group("canary", {"tier": "canary"}),
            _group("azure", {"cloud": "Azure"}),
            _group("eu", None, [{"key": "region", "operator": "Exists"}]),
            _group("none", {"x": "y"}),
        ],
        per_group=1,
    )
    result = run(one_set_world(*GROUPED), a_placement(spec))
    assert [(g.name, g.index, g.clusters) for g in result.groups] == [
        ("canary", 0, ("c1",)),
        ("canary", 1, ("c2",)),
        ("azure", 2, ("c3",)),
        ("eu", 3, ("c5",)),
        ("", 4, ("c4",)),
    ]
    assert [p.name for p in result.pages] == [f"placement1-decision-{i}" for i in range(1, 6)]


def test_cluster_invalid_group_selector_keeps_earlier_groups() -> None:
    bad = {
        "groupName": "bad",
        "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Nope"}]}},
    }
    spec = _strategy([_group("canary", {"tier": "canary"}), bad, _group("azure", {"cloud": "Azure"})])
    result = run(one_set_world(*GROUPED), a_placement(spec))
    assert [(g.name, g.clusters) for g in result.groups] == [("canary", ("c1", "c2"))]
    assert decided(result) == ["c1", "c2"]
    assert condition(result, MISCONFIGURED) == (
        "True",
        "Misconfigured",
        ':"Nope" is not a valid label selector operator',
    )
    assert len(result.selected) == 5


def test_cluster_group_length_failure_removes_every_page() -> None:
    spec = _strategy([], per_group="ten")
    result = run(one_set_world(*GROUPED), a_placement(spec))
    assert result.groups == [] and result.pages == []
    assert len(result.selected) == 5
    assert condition(result, SATISFIED)[0] == "True"
    assert condition(result, MISCONFIGURED)[2] == ":ten invalid type: string is not a percentage"


def test_cluster_group_failure_replaces_earlier_warning() -> None:
    world = one_set_world(a_cluster("c1"))
    world.with_score("c1", "r", {"s": 1}, valid_until="2020-01-01T00:00:00Z")
    spec = {
        **_strategy([], per_group="bad"),
        "prioritizerPolicy": {
            "configurations": [{"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "r", "scoreName": "s"}}}]
        },
    }
    result = run(world, a_placement(spec))
    assert condition(result, MISCONFIGURED)[2] == ":bad invalid type: string is not a percentage"
    assert result.warning is None


def test_cluster_paging_is_byte_ordered_and_capped_at_100() -> None:
    clusters = [a_cluster(f"cluster{i}") for i in range(1, 102)]
    result = run(one_set_world(*clusters), a_placement())
    assert [len(p.clusters) for p in result.pages] == [100, 1]
    assert result.pages[1].clusters == ("cluster99",)
    assert result.pages[0].clusters[:3] == ("cluster1", "cluster10", "cluster100")
    assert {p.group_index for p in result.pages} == {0}


def test_cluster_page_objects_and_group_status() -> None:
    spec = _strategy([_group("canary", {"tier": "canary"})])
    result = run(one_set_world(*GROUPED), a_placement(spec))
    pages = page_objects("ns1", "placement1", result.pages, Interning())
    assert pages[0] == {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {
            "name": "placement1-decision-1",
            "namespace": "ns1",
            "labels": {
                "cluster.open-cluster-management.io/placement": "placement1",
                "cluster.open-cluster-management.io/decision-group-name": "canary",
                "cluster.open-cluster-management.io/decision-group-index": "0",
            },
        },
        "status": {"decisions": [{"clusterName": "c1", "reason": ""}, {"clusterName": "c2", "reason": ""}]},
    }
    assert pages[1]["metadata"]["labels"]["cluster.open-cluster-management.io/decision-group-name"] == ""
    assert group_statuses(result.pages) == [
        {
            "decisionGroupIndex": 0,
            "decisionGroupName": "canary",
            "decisions": ["placement1-decision-1"],
            "clusterCount": 2,
        },
        {"decisionGroupIndex": 1, "decisionGroupName": "", "decisions": ["placement1-decision-2"], "clusterCount": 3},
    ]


def test_cluster_no_selection_gives_one_empty_page() -> None:
    result = run(one_set_world(*GROUPED), a_placement({"numberOfClusters": 0}))
    assert [(p.name, p.group_name, p.group_index, p.clusters) for p in result.pages] == [
        ("placement1-decision-1", "", 0, ())
    ]


# --- the group count's name on the wire ----------------------------------------------------------------------------

_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_KEY = "Placement/apps/web"


def _event(kind: str, data: Any) -> bytes:
    return orjson.dumps({"specversion": "1.0", "id": f"id-{kind}", "source": "/t", "type": f"{kind}.v1", "data": data})


def _inputs(*clusters: str) -> list[InputRecord]:
    status = TopicRole.CLUSTER_STATUS
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    values = [
        ("ManagedClusterSet/prod", _event("managedclusterset.applied", {"metadata": {"name": "prod"}})),
        ("ManagedClusterSetBinding/apps/prod", _event("managedclustersetbinding.applied", binding)),
    ]
    for name in clusters:
        data = {"metadata": {"name": name, "labels": {"cluster.open-cluster-management.io/clusterset": "prod"}}}
        values.append((f"ManagedCluster/{name}", _event("managedcluster.applied", data)))
    return [InputRecord(status, 0, n, key.encode(), value, _T0, status.value) for n, (key, value) in enumerate(values)]


def _placement(offset: int = 0) -> InputRecord:
    placement = {"metadata": {"name": "web", "namespace": "apps", "generation": 1}, "spec": {}}
    value = _event("placement.applied", placement)
    return InputRecord(TopicRole.SUBMISSIONS, 0, offset, _KEY.encode(), value, _T0, TopicRole.SUBMISSIONS.value)


def _decisions(outputs: list[OutputRecord]) -> list[dict[str, Any]]:
    return [orjson.loads(o.value)["data"] for o in outputs if o.topic is TopicRole.DECISIONS and o.value]


_OLD_ENTRY = {  # a decision changelog entry as the version that wrote `clustersCount` wrote it
    "published": {
        "pages": [["web-decision-1", "", 0, ["c1", "c2"]]],
        "selected": 2,
        "conditions": [
            {
                "type": "PlacementMisconfigured",
                "status": "False",
                "reason": "Succeedconfigured",
                "message": "Placement configurations check pass",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "PlacementSatisfied",
                "status": "True",
                "reason": "AllDecisionsScheduled",
                "message": "All cluster decisions scheduled",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
        "warning": None,
        "generation": 1,
        "evaluationTime": "2026-01-01T00:00:00+00:00",
    },
    "due": None,
}


@pytest.mark.parametrize(
    ("clusters", "counts"),
    [(("c1", "c2"), [2]), (("c1",), [1]), ((), [0])],
    ids=["two", "one", "none"],
)
def test_cluster_decision_groups_carry_upstream_cluster_count(clusters: tuple[str, ...], counts: list[int]) -> None:
    live = Runtime([ClusterPlacementEngine()])
    live.process(_inputs(*clusters), _T0)
    (decision,) = _decisions(live.process([_placement()], _T0))
    assert [g["clusterCount"] for g in decision["decisionGroups"]] == counts
    assert all("clustersCount" not in g for g in decision["decisionGroups"])


def test_cluster_old_changelog_entry_is_restored_and_not_republished() -> None:
    """An entry written before the rename restores; the same answer is not published again; the next one, when
    the answer changes, carries `clusterCount`."""
    placement = {"placement": {"metadata": {"name": "web", "namespace": "apps", "generation": 1}, "spec": {}}}
    fresh = Runtime([ClusterPlacementEngine()])
    fresh.process(_inputs("c1", "c2"), _T0)
    fresh.restore(_KEY, orjson.dumps({"kind": "Placement", "v": 1, "state": placement}))
    fresh.restore(f"{_KEY}/{DECISION_PART}", orjson.dumps({"kind": "Placement", "v": 1, "state": _OLD_ENTRY}))
    assert _decisions(fresh.process(_inputs("c1", "c2"), _T0)) == []
    changed = _decisions(fresh.process(_inputs("c1", "c2", "c3")[-1:], _T0))
    assert [g["clusterCount"] for g in changed[-1]["decisionGroups"]] == [3]


@pytest.mark.parametrize(
    ("group", "count"),
    [
        ({"clustersCount": 2}, 2),  # an event on the compacted decisions topic from before the rename
        ({"clusterCount": 3}, 3),
    ],
    ids=["old-name", "new-name"],
)
def test_cluster_decided_events_with_either_count_name_are_read(group: dict[str, int], count: int) -> None:
    data = {
        "namespace": "apps",
        "name": "web",
        "decisionGroups": [
            {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["web-decision-1"], **group}
        ],
    }
    decoded = decode_event(_event("placement.decided", data), TopicRole.DECISIONS)
    assert isinstance(decoded.data, PlacementDecided)
    assert decoded.data.decision_groups == [
        {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["web-decision-1"], "clusterCount": count}
    ]
    assert dump_model(decoded.data)["decisionGroups"] == decoded.data.decision_groups  # written with the new name


def test_cluster_schema_names_the_group_count_cluster_count() -> None:
    schema = PlacementDecided.model_json_schema(by_alias=True, mode="serialization")
    group = schema["$defs"]["DecisionGroupStatus"]
    assert "clusterCount" in group["properties"] and "clustersCount" not in group["properties"]
    assert "clusterCount" in group["required"]
