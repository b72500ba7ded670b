"""What `watch` publishes for an API object, given what it published before (pure: no API server, no Kafka)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli.watch.changes import change_of_deletion, change_of_object, changes_of_list
from cli.watch.kinds import HANDOVER_ANNOTATION, OCM_KINDS, POD, WatchedKind
from cli.watch.published import Published, in_doubt

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
KINDS = {kind.kind: kind for kind in OCM_KINDS}
CLUSTER, PLACEMENT = KINDS["ManagedCluster"], KINDS["Placement"]


def cluster(name: str = "c1", cpu: str = "8", version: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "resourceVersion": version, "labels": {"env": "prod"}},
        "spec": {"hubAcceptsClient": True},
        "status": {"allocatable": {"cpu": cpu}},
    }


def placement(annotated: bool = True, clusters: int = 1, status: Any = None, version: str = "1") -> dict[str, Any]:
    annotations = {HANDOVER_ANNOTATION: "true"} if annotated else {}
    body: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "web", "namespace": "apps", "annotations": annotations, "resourceVersion": version},
        "spec": {"numberOfClusters": clusters},
    }
    if status is not None:
        body["status"] = status
    return body


def published_after(kind: WatchedKind, *bodies: dict[str, Any], tmp_path: Path, take_all: bool = False) -> Published:
    published = Published(tmp_path / "state.json")
    for body in bodies:
        change = change_of_object(kind, body, published, NOW, take_all=take_all)
        if change is not None:
            published.put(change.object_id, change.entry)
    return published


def types(change: Any) -> list[tuple[str, str | None]]:
    return [(r.key, None if r.value is None else r.value["type"]) for r in change.records]


@pytest.mark.parametrize(
    ("kind", "before", "after", "expected"),
    [
        (CLUSTER, None, cluster(), [("ManagedCluster/c1", "managedcluster.applied.v1")]),
        (CLUSTER, cluster(), cluster(version="2"), None),  # only the resourceVersion changed
        (CLUSTER, cluster(), cluster(cpu="16"), [("ManagedCluster/c1", "managedcluster.applied.v1")]),
        (PLACEMENT, None, placement(), [("Placement/apps/web", "placement.applied.v1")]),
        (PLACEMENT, None, placement(annotated=False), None),  # upstream's controller decides it
        (PLACEMENT, placement(), placement(status={"numberOfSelectedClusters": 1}, version="2"), None),
        (PLACEMENT, placement(), placement(clusters=2), [("Placement/apps/web", "placement.applied.v1")]),
        (PLACEMENT, placement(), placement(annotated=False), [("Placement/apps/web", "placement.deleted.v1")]),
    ],
)
def test_a_change_is_published_when_what_it_says_differs(
    tmp_path: Path, kind: WatchedKind, before: Any, after: Any, expected: Any
) -> None:
    published = published_after(kind, *([before] if before else []), tmp_path=tmp_path)
    change = change_of_object(kind, after, published, NOW + timedelta(seconds=5), take_all=False)
    assert (None if change is None else types(change)) == expected


def test_all_placements_takes_one_without_the_annotation(tmp_path: Path) -> None:
    published = Published(tmp_path / "state.json")
    change = change_of_object(PLACEMENT, placement(annotated=False), published, NOW, take_all=True)
    assert change is not None and types(change) == [("Placement/apps/web", "placement.applied.v1")]


def test_a_placement_is_published_without_the_hand_over_annotation_so_the_engine_decides_it(tmp_path: Path) -> None:
    body = placement()
    body["metadata"]["annotations"]["team"] = "web"
    change = change_of_object(PLACEMENT, body, Published(tmp_path / "state.json"), NOW, take_all=False)
    assert change is not None and change.records[0].value is not None
    assert change.records[0].value["data"]["metadata"]["annotations"] == {"team": "web"}
    alone = change_of_object(PLACEMENT, placement(), Published(tmp_path / "other.json"), NOW, take_all=False)
    assert alone is not None and alone.records[0].value is not None
    assert "annotations" not in alone.records[0].value["data"]["metadata"]


@pytest.mark.parametrize(
    ("kind", "body", "expected"),
    [
        (CLUSTER, cluster(), [("ManagedCluster/c1", None)]),  # a tombstone on the compacted topic
        (PLACEMENT, placement(), [("Placement/apps/web", "placement.deleted.v1")]),
    ],
)
def test_a_deleted_object_gets_the_deletion_records_apply_would_send(
    tmp_path: Path, kind: WatchedKind, body: dict[str, Any], expected: list[Any]
) -> None:
    published = published_after(kind, body, tmp_path=tmp_path)
    change = change_of_deletion(kind, body, published, NOW)
    assert change is not None and types(change) == expected and change.entry is None
    assert change_of_deletion(kind, body, Published(tmp_path / "other.json"), NOW) is None


def test_a_relist_publishes_what_differs_and_deletes_what_is_gone(tmp_path: Path) -> None:
    published = published_after(CLUSTER, cluster("c1"), cluster("c2"), cluster("c3"), tmp_path=tmp_path)
    listed = [cluster("c1", version="9"), cluster("c2", cpu="4"), cluster("c4")]
    changes = changes_of_list(CLUSTER, listed, published, NOW, take_all=False)
    assert [types(c) for c in changes] == [
        [("ManagedCluster/c2", "managedcluster.applied.v1")],
        [("ManagedCluster/c4", "managedcluster.applied.v1")],
        [("ManagedCluster/c3", None)],
    ]


def test_the_state_survives_a_restart(tmp_path: Path) -> None:
    published = published_after(PLACEMENT, placement(), tmp_path=tmp_path)
    published.save()
    again = Published.load(tmp_path / "state.json")
    assert change_of_object(PLACEMENT, placement(version="7"), again, NOW, take_all=False) is None
    gone = change_of_deletion(PLACEMENT, placement(), again, NOW)
    assert gone is not None and types(gone) == [("Placement/apps/web", "placement.deleted.v1")]


def test_pods_not_scheduled_by_yunikorn_are_not_published(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}
    assert change_of_object(POD, pod, Published(tmp_path / "s.json"), NOW, take_all=False) is None


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        ([cluster("c1")], [[("ManagedCluster/c1", "managedcluster.applied.v1")]]),  # published again, as it is
        ([], [[("ManagedCluster/c1", None)]]),  # gone meanwhile: its deletion, whether or not the first was sent
    ],
)
def test_a_change_in_doubt_is_published_again_by_the_next_list(
    tmp_path: Path, listed: list[dict[str, Any]], expected: list[Any]
) -> None:
    published = Published(tmp_path / "state.json")
    change = change_of_object(CLUSTER, cluster("c1"), published, NOW, take_all=False)
    assert change is not None
    published.put(change.object_id, in_doubt(change.object_id, change.entry, None))
    published.save()  # killed here, before the broker's acknowledgement was recorded
    again = Published.load(tmp_path / "state.json")
    assert [types(c) for c in changes_of_list(CLUSTER, listed, again, NOW, take_all=False)] == expected
