"""Inventory records are dated by their event time, but never later than the processor's clock: a producer whose
clock runs ahead cannot keep a taint's toleration from expiring."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from engine.inventory import Inventory
from engine.registry import build_engines
from engine.runtime import InputRecord, Runtime
from engine.runtime.inputs import apply_inventory_record
from topics.names import TopicRole

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
YEAR = timedelta(days=365)
SET_LABEL = "cluster.open-cluster-management.io/clusterset"


def _event(kind: str, data: dict[str, Any], time: datetime | None) -> bytes:
    value: dict[str, Any] = {"specversion": "1.0", "id": kind, "source": "/t", "type": f"{kind}.v1", "data": data}
    if time is not None:
        value["time"] = time.isoformat()
    return orjson.dumps(value)


def _record(topic: TopicRole, key: str, value: bytes | None, stamp: datetime | None = None) -> InputRecord:
    return InputRecord(topic, 0, 0, key.encode(), value, stamp, topic.value)


def _taints(time: datetime | None, stamp: datetime | None = None) -> InputRecord:
    taint = {"key": "maintenance", "value": "", "effect": "NoSelect"}  # no timeAdded: dated on arrival
    body = _event("cluster.taints.updated", {"cluster": "c1", "taints": [taint]}, time)
    return _record(TopicRole.TAINTS, "c1", body, stamp)


@pytest.mark.parametrize(
    ("event_time", "record_time", "dated"),
    [
        (NOW + YEAR, None, NOW),
        (NOW + timedelta(seconds=1), NOW, NOW),
        (NOW - timedelta(minutes=5), None, NOW - timedelta(minutes=5)),
        (NOW, None, NOW),
        (None, NOW + YEAR, NOW),
        (None, NOW - timedelta(seconds=30), NOW - timedelta(seconds=30)),
        (None, None, NOW),
    ],
    ids=[
        "event-a-year-ahead",
        "event-a-second-ahead",
        "event-behind",
        "event-now",
        "record-time-ahead",
        "record-time-behind",
        "no-time",
    ],
)
def test_an_undated_taint_is_dated_no_later_than_the_processor_clock(
    event_time: datetime | None, record_time: datetime | None, dated: datetime
) -> None:
    inventory = Inventory()
    apply_inventory_record(inventory, _taints(event_time, record_time), NOW)
    assert [t.time_added for t in inventory.taints_of("c1")] == [dated]


def _inventory_and_placement(taint_time: datetime) -> list[InputRecord]:
    status = TopicRole.CLUSTER_STATUS
    cluster = {"metadata": {"name": "c1", "labels": {SET_LABEL: "prod"}}}
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    toleration = {"key": "maintenance", "operator": "Exists", "effect": "NoSelect", "tolerationSeconds": 20}
    placement = {"metadata": {"name": "web", "namespace": "apps"}, "spec": {"tolerations": [toleration]}}
    return [
        _record(
            status, "ManagedClusterSet/prod", _event("managedclusterset.applied", {"metadata": {"name": "prod"}}, NOW)
        ),
        _record(status, "ManagedClusterSetBinding/apps/prod", _event("managedclustersetbinding.applied", binding, NOW)),
        _record(status, "ManagedCluster/c1", _event("managedcluster.applied", cluster, NOW)),
        _taints(taint_time),
        _record(TopicRole.SUBMISSIONS, "Placement/apps/web", _event("placement.applied", placement, NOW)),
    ]


def _selected(outputs: list[Any]) -> list[list[str]]:
    found = []
    for out in outputs:
        if out.topic is TopicRole.DECISIONS and out.value is not None:
            pages = orjson.loads(out.value)["data"]["placementDecisions"]
            found.append([d["clusterName"] for page in pages for d in page["status"]["decisions"]])
    return found


def test_a_toleration_expires_after_its_seconds_of_processor_time_whatever_the_event_time() -> None:
    runtime = Runtime(build_engines())
    assert _selected(runtime.process(_inventory_and_placement(NOW + YEAR), NOW)) == [["c1"]], "tolerated at first"
    assert runtime.next_timer() == NOW + timedelta(seconds=20)
    assert _selected(runtime.fire_timers(NOW + timedelta(seconds=19))) == []
    assert _selected(runtime.fire_timers(NOW + timedelta(seconds=20))) == [[]], "dropped after 20 s"
