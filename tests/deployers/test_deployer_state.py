"""The example deployer's table and directory: the last decision per subject wins, deletes remove, files follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from deployers.directory import DecisionDirectory
from deployers.state import DecisionTable, clusters_of

WEB, DB = "Placement/apps/web", "PlacementRule/apps/db"


def page(name: str, clusters: list[str], group: str = "") -> dict[str, Any]:
    labels = {"cluster.open-cluster-management.io/placement": "web"}
    if group:
        labels["cluster.open-cluster-management.io/decision-group-name"] = group
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": name, "namespace": "apps", "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def placement(*pages: dict[str, Any], deleted: bool = False, **more: Any) -> bytes:
    data = {"namespace": "apps", "name": "web", "placementDecisions": list(pages), "deleted": deleted, **more}
    return event("placement.decided.v1", data)


def rule(*names: str, deleted: bool = False) -> bytes:
    data = {
        "namespace": "apps",
        "name": "db",
        "decisions": [{"kind": "ManagedCluster", "name": n} for n in names],
        "deleted": deleted,
    }
    return event("placementrule.decided.v1", data)


def event(wire_type: str, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"specversion": "1.0", "id": "x", "source": "/t", "type": wire_type, "data": data})


APP = event(
    "application.placed.v1",
    {"applicationId": "a", "partition": "default", "queue": "root.a", "rule": "provided", "created": False},
)

Record = tuple[str, bytes | None]


@pytest.mark.parametrize(
    ("records", "current", "changes"),
    [
        ([(WEB, placement(page("web-decision-1", ["c1", "c2"])))], {WEB: ["c1", "c2"]}, 1),
        # pages and groups: the decision is every page, in order
        (
            [(WEB, placement(page("web-decision-1", ["c1"], "canary"), page("web-decision-2", ["c2", "c3"], "rest")))],
            {WEB: ["c1", "c2", "c3"]},
            1,
        ),
        # a re-decision replaces the earlier one whole; the same decision again changes nothing
        (
            [
                (WEB, placement(page("web-decision-1", ["c1", "c2"]))),
                (WEB, placement(page("web-decision-1", ["c3"]))),
                (WEB, placement(page("web-decision-1", ["c3"]))),
            ],
            {WEB: ["c3"]},
            2,
        ),
        # an event from before decisions carried the selected clusters' scores only (every passing cluster's),
        # then the same decision from the upgraded processor: scores are not deployed, so nothing changes
        (
            [
                (WEB, placement(page("web-decision-1", ["c1"]), scores={"c1": 200, "c2": 150, "c3": -100})),
                (WEB, placement(page("web-decision-1", ["c1"]), scores={"c1": 200})),
            ],
            {WEB: ["c1"]},
            1,
        ),
        # deleted: true, then the tombstone (which then changes nothing)
        ([(WEB, placement(page("p", ["c1"]))), (WEB, placement(deleted=True)), (WEB, None)], {}, 2),
        ([(WEB, placement(page("p", ["c1"]))), (WEB, None)], {}, 2),
        ([(DB, rule("c1")), (DB, rule("c2")), (DB, rule(deleted=True))], {}, 3),
        ([(DB, rule("c1", "c2"))], {DB: ["c1", "c2"]}, 1),
        # not kept: applications (one shared key), unreadable values, keys that are no safe file name
        ([("Application/default", APP), (WEB, b"{broken"), ("Placement/../x", placement(page("p", ["c1"])))], {}, 0),
    ],
)
def test_the_table_keeps_the_last_decision_per_subject(
    records: list[Record], current: dict[str, list[str]], changes: int
) -> None:
    table = DecisionTable()
    made = [table.apply(key.encode(), value) for key, value in records]
    assert {subject: clusters_of(doc) for subject, doc in table.current.items()} == current
    assert sum(change is not None for change in made) == changes


def test_files_are_written_once_replaced_whole_and_removed(tmp_path: Path) -> None:
    table, directory = DecisionTable(), DecisionDirectory(tmp_path)
    first = table.apply(WEB.encode(), placement(page("web-decision-1", ["c1", "c2"])))
    assert first is not None
    assert directory.write(WEB, first.document) == "wrote placements/apps/web.yaml: c1, c2 (+c1 +c2)"
    path = tmp_path / "placements/apps/web.yaml"
    stamp = path.stat().st_mtime_ns
    assert directory.write(WEB, first.document) is None, "the same decision leaves the file alone"
    assert path.stat().st_mtime_ns == stamp
    second = table.apply(WEB.encode(), placement(page("web-decision-1", ["c2", "c3"])))
    assert second is not None
    assert directory.write(WEB, second.document) == "wrote placements/apps/web.yaml: c2, c3 (+c3 -c1)"
    assert yaml.safe_load(path.read_text()) == {
        "apiVersion": "v1",
        "kind": "List",
        "items": [page("web-decision-1", ["c2", "c3"])],
    }
    assert [p.name for p in path.parent.iterdir()] == ["web.yaml"], "no temporary file is left behind"
    assert directory.write(WEB, None) == "removed placements/apps/web.yaml (was c2, c3)"
    assert not path.exists()


def test_reconcile_after_a_restart_removes_what_was_deleted_and_leaves_other_files(tmp_path: Path) -> None:
    directory = DecisionDirectory(tmp_path)
    table = DecisionTable()
    for key, value in ((WEB, placement(page("p", ["c1"]))), (DB, rule("c2"))):
        change = table.apply(key.encode(), value)
        assert change is not None
        directory.write(key, change.document)
    (tmp_path / "placements/apps/README.txt").write_text("not ours")
    table.apply(DB.encode(), None)  # deleted while the deployer was down
    assert directory.reconcile(table.current) == ["PlacementRule/apps/db: removed placementrules/apps/db.yaml (was c2)"]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.*")) == [
        "placements/apps/README.txt",
        "placements/apps/web.yaml",
    ]
    assert directory.reconcile(table.current) == []
