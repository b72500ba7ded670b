"""Restoring many changelog entries at once (`Runtime.restoring`) gives what restoring them one by one gives.

Driven by the real engines: a cluster placement writes its Placement and its decision as two entries, the queue
engine a partition's entry and one per application, so both kinds of parted state are read back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.cluster.tracking.state import PlacementState
from engine.core import SubjectEngine
from engine.errors import InvalidStateError
from engine.queue.config import load_queue_config
from engine.queue.engine import QueueEngine
from engine.runtime import InputRecord, OutputRecord, Runtime
from topics.names import TopicRole

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUEUES = load_queue_config(
    """
partitions:
  - name: default
    queues: [{name: root, submitacl: "*", queues: [{name: a}]}]
    placementrules: [{name: provided, create: true}]
""",
    "queues.yaml",
)


class TrackCounting(ClusterPlacementEngine):
    """The cluster engine, counting how often each subject's indexes were brought in step."""

    def __init__(self) -> None:
        super().__init__()
        self.tracked: dict[str, int] = {}

    def track(self, key: str, state: PlacementState | None) -> None:
        self.tracked[key] = self.tracked.get(key, 0) + 1
        super().track(key, state)


class _Records:
    """Input records with offsets counted per topic."""

    def __init__(self) -> None:
        self._offsets: dict[TopicRole, int] = {}

    def __call__(self, topic: TopicRole, key: str, kind: str, data: dict[str, Any]) -> InputRecord:
        offset = self._offsets[topic] = self._offsets.get(topic, -1) + 1
        event = {"specversion": "1.0", "id": f"{key}-{offset}", "source": "/t", "type": f"{kind}.v1", "data": data}
        return InputRecord(topic, 0, offset, key.encode(), orjson.dumps(event), T0, topic.value)


def _cluster(records: _Records, name: str, region: str) -> InputRecord:
    labels = {"cluster.open-cluster-management.io/clusterset": "prod", "region": region}
    data = {"metadata": {"name": name, "labels": labels}}
    return records(TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", "managedcluster.applied", data)


def _placement(records: _Records, name: str, region: str | None = None) -> InputRecord:
    spec: dict[str, Any] = {}
    if region is not None:
        selector = {"labelSelector": {"matchLabels": {"region": region}}}
        spec["predicates"] = [{"requiredClusterSelector": selector}]
    data = {"metadata": {"name": name, "namespace": "apps", "generation": 1}, "spec": spec}
    return records(TopicRole.SUBMISSIONS, f"Placement/apps/{name}", "placement.applied", data)


def _deleted(records: _Records, name: str) -> InputRecord:
    data = {"metadata": {"name": name, "namespace": "apps"}}
    return records(TopicRole.SUBMISSIONS, f"Placement/apps/{name}", "placement.deleted", data)


def _inventory(records: _Records) -> list[InputRecord]:
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    status = TopicRole.CLUSTER_STATUS
    return [
        records(status, "ManagedClusterSet/prod", "managedclusterset.applied", {"metadata": {"name": "prod"}}),
        records(status, "ManagedClusterSetBinding/apps/prod", "managedclustersetbinding.applied", binding),
        *(_cluster(records, f"c{i}", "east" if i % 2 else "west") for i in range(4)),
    ]


def _placements(records: _Records) -> list[list[InputRecord]]:
    """Batches whose changelog has every shape: new subjects, re-decisions, a deletion and a re-creation."""
    return [
        [_placement(records, "all"), _placement(records, "east", "east"), _placement(records, "gone", "west")],
        [_cluster(records, "c0", "east")],  # re-decides two: only their decision entries are written
        [_deleted(records, "gone")],  # two tombstones
        [_placement(records, "gone", "east"), _placement(records, "east", "west")],  # back again; a new spec
    ]


def _submitted(records: _Records, app: str, queue: str) -> InputRecord:
    data = {"applicationId": app, "partition": "default", "queue": queue, "user": {"user": "alice"}}
    return records(TopicRole.SUBMISSIONS, "Application/default", "application.submitted", data)


def _queue_batches(records: _Records) -> list[list[InputRecord]]:
    return [[_submitted(records, "app-1", "root.a")], [_submitted(records, "app-2", "root.b")]]


Scenario = Callable[[], tuple[list[SubjectEngine[Any]], list[list[InputRecord]]]]


def _cluster_scenario() -> tuple[list[SubjectEngine[Any]], list[list[InputRecord]]]:
    records = _Records()
    return [ClusterPlacementEngine()], [_inventory(records), *_placements(records)]


def _queue_scenario() -> tuple[list[SubjectEngine[Any]], list[list[InputRecord]]]:
    records = _Records()
    return [QueueEngine()], _queue_batches(records)


SCENARIOS: dict[str, Scenario] = {"cluster-placements": _cluster_scenario, "queue-applications": _queue_scenario}


def _changelog(
    engines: list[SubjectEngine[Any]], batches: list[list[InputRecord]]
) -> tuple[Runtime, list[OutputRecord]]:
    live = Runtime(engines, config=QUEUES)
    written: list[OutputRecord] = []
    for batch in batches:
        written += [o for o in live.process(batch, T0) if o.topic is TopicRole.CHANGELOG]
    return live, written


def _entries(written: list[OutputRecord]) -> list[tuple[str, bytes | None]]:
    return [(o.key.decode(), o.value) for o in written if o.key is not None]


def _fresh(engine: SubjectEngine[Any], batches: list[list[InputRecord]]) -> Runtime:
    """A runtime with the scenario's inventory read (its first batch when that holds only inventory)."""
    runtime = Runtime([engine], config=QUEUES)
    if all(record.topic is TopicRole.CLUSTER_STATUS for record in batches[0]):
        runtime.process(batches[0], T0)
    return runtime


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_restoring_at_once_equals_restoring_entry_by_entry(scenario: Scenario) -> None:
    engines, batches = scenario()
    live, written = _changelog(engines, batches)
    one_by_one, at_once = _fresh(type(engines[0])(), batches), _fresh(type(engines[0])(), batches)
    for key, value in _entries(written):
        one_by_one.restore(key, value)
    with at_once.restoring() as restore:
        for key, value in _entries(written):
            restore(key, value)
    assert at_once.states == one_by_one.states == live.states
    for key in live.states:  # each remembers what the changelog holds: nothing is written again
        assert at_once.subjects.changelog_entries(key) == one_by_one.subjects.changelog_entries(key) == []


def test_restoring_reports_the_subjects_it_left_with_a_state() -> None:
    """What a task's owner re-decides after its restore: each subject with a state once, none that a tombstone
    ended, in the order their entries were first read."""
    engines, batches = _cluster_scenario()
    live, written = _changelog(engines, batches)
    ended = next(iter(live.states))
    entries = [*_entries(written), (ended, None), (f"{ended}/decision", None)]
    runtime = _fresh(ClusterPlacementEngine(), batches)
    restored: list[str] = []
    with runtime.restoring(restored) as restore:
        for key, value in entries:
            restore(key, value)
        assert restored == [], "reported on leaving, once every entry is read"
    assert restored == [key for key in live.states if key != ended] != []
    assert ended not in runtime.states


def test_each_subject_is_tracked_once_and_indexed_as_live() -> None:
    records = _Records()
    batches = [_inventory(records), *_placements(records)]
    _, written = _changelog([ClusterPlacementEngine()], batches)
    engine = TrackCounting()
    runtime = _fresh(engine, batches)
    with runtime.restoring() as restore:
        for key, value in _entries(written):
            restore(key, value)
        assert engine.tracked == {}, "nothing is set before the restore ends"
    assert engine.tracked == dict.fromkeys(runtime.states, 1)
    one_by_one = _fresh(ClusterPlacementEngine(), batches)
    for key, value in _entries(written):
        one_by_one.restore(key, value)
    expected = next(e for e in one_by_one.subjects.engines.values() if isinstance(e, ClusterPlacementEngine))
    assert engine.decided_counts() == expected.decided_counts() != {}


UNREADABLE = b'{"kind": "Placement", "v": 1, "state": {"placement": 1, "published": {"pages": 1}}}'
"""Neither a Placement entry nor a decision entry can be read from it."""


@pytest.mark.parametrize(
    ("bad_at", "kept"),
    [(0, None), (1, "placement")],
    ids=["placement-entry-unreadable", "decision-entry-unreadable"],
)
def test_an_unreadable_entry_costs_only_itself(bad_at: int, kept: str | None) -> None:
    records = _Records()
    batches = [_inventory(records), [_placement(records, "p"), _placement(records, "q")]]
    _, written = _changelog([ClusterPlacementEngine()], batches)
    entries = _entries(written)
    assert [key for key, _ in entries[:2]] == ["Placement/apps/p", "Placement/apps/p/decision"]
    runtime = _fresh(ClusterPlacementEngine(), batches)
    refused = []
    with runtime.restoring() as restore:
        for i, (key, value) in enumerate(entries):
            try:
                restore(key, UNREADABLE if i == bad_at else value)
            except InvalidStateError:
                refused.append(key)
    assert refused == [entries[bad_at][0]]
    assert runtime.states["Placement/apps/q"].published is not None  # the entries after it were read
    p = runtime.states.get("Placement/apps/p")
    assert (None if p is None else "placement" if p.published is None else "decided") == kept
