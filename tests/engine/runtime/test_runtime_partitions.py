"""Subject records are applied only by the task their key hashes to: a record that arrived on another partition
is dead-lettered at VALIDATE with what to fix, and reported once for the service's metric and log."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from engine.registry import build_engines
from engine.runtime import InputRecord, Misplaced, Runtime, Stage
from tests.engine.runtime.test_runtime_processor import T0, CountingEngine, cluster, decided, event, placement, record
from topics.names import TopicRole

_DLQ = "__connect.errors."


def _task_by_last_digit(key: str) -> int:
    """Placement/ns/pN belongs to task N % 4."""
    return int(key[-1]) % 4


def _headers(runtime: Runtime, given: InputRecord) -> dict[str, str]:
    letters = [o for o in runtime.process([given], T0) if o.topic is TopicRole.DEAD_LETTER]
    assert len(letters) == 1
    assert letters[0].partition == given.partition, "dead-lettered in the arrival task's transaction"
    return {name: value.decode() for name, value in letters[0].headers}


def _deletion(name: str) -> InputRecord:
    data = {"metadata": {"name": name, "namespace": "ns"}}
    return record(TopicRole.SUBMISSIONS, f"Placement/ns/{name}", event("placement.deleted", data))


@pytest.mark.parametrize(
    ("name", "arrived", "expected"),
    [("p1", 0, 1), ("p2", 3, 2), ("p7", 1, 3), ("p4", 2, 0)],
)
def test_an_applied_record_off_its_partition_is_dead_lettered_and_not_applied(
    name: str, arrived: int, expected: int
) -> None:
    runtime = Runtime([CountingEngine()], task_of=_task_by_last_digit)
    runtime.process([cluster("c", "a")], T0)
    given = replace(placement(name, "a"), partition=arrived, topic_name="placement.submissions")
    headers = _headers(runtime, given)
    assert headers[_DLQ + "stage"] == Stage.VALIDATE
    assert headers[_DLQ + "exception.class.name"] == "engine.errors.MisplacedRecordError"
    message = headers[_DLQ + "exception.message"]
    assert f"belongs on partition {expected} of placement.submissions" in message
    assert f"arrived on partition {arrived}" in message
    assert "partitioner=murmur2_random" in message
    assert runtime.states == {}, "nothing applied"
    assert runtime.take_misplaced() == [Misplaced("placement.submissions", "/test", expected, arrived)]
    assert runtime.take_misplaced() == [], "taken once"


def test_a_record_on_its_partition_is_applied_and_decided() -> None:
    runtime = Runtime([CountingEngine()], task_of=_task_by_last_digit)
    outputs = runtime.process([cluster("c", "a"), replace(placement("p6", "a"), partition=2)], T0)
    assert decided(outputs) == [("p6", 1)]
    assert [o for o in outputs if o.topic is TopicRole.DEAD_LETTER] == []
    assert runtime.take_misplaced() == []


def test_a_tombstone_or_deletion_off_its_partition_deletes_nothing() -> None:
    runtime = Runtime([CountingEngine()], task_of=_task_by_last_digit)
    runtime.process([cluster("c", "a"), replace(placement("p5", "a"), partition=1)], T0)
    tombstone = InputRecord(TopicRole.SUBMISSIONS, 0, 99, b"Placement/ns/p5", None, T0, "placement.submissions")
    for wrong in (tombstone, replace(_deletion("p5"), partition=3)):
        assert _headers(runtime, wrong)[_DLQ + "stage"] == Stage.VALIDATE
        assert "Placement/ns/p5" in runtime.states, "the owner's subject stays"
    assert [m.producer for m in runtime.take_misplaced()] == ["", "/test"], "a tombstone names no producer"


def test_an_advisor_recommendation_off_its_partition_is_refused_too() -> None:
    data = {"rule": {"namespace": "ns", "name": "r1"}, "round": 1, "advisor": "a", "scores": {}}
    given = record(TopicRole.ADVISOR_RECOMMENDATIONS, "PlacementRule/ns/r1", event("recommendation.posted", data))
    runtime = Runtime(build_engines(), task_of=_task_by_last_digit)
    assert "belongs on partition 1" in _headers(runtime, replace(given, partition=2))[_DLQ + "exception.message"]


def test_without_a_task_function_every_partition_is_one_task() -> None:
    """Replay (and any single-task runtime) has no partitions to check: its records are all applied."""
    runtime = Runtime([CountingEngine()])
    outputs = runtime.process([cluster("c", "a"), replace(placement("p1", "a"), partition=3)], T0)
    assert decided(outputs) == [("p1", 1)]
    assert runtime.take_misplaced() == []


def test_the_producer_name_is_cut_short() -> None:
    body = orjson.dumps(event("placement.applied", {"metadata": {"namespace": "ns", "name": "p1"}}, source="s" * 5000))
    given = record(TopicRole.SUBMISSIONS, "Placement/ns/p1", None, raw=body)
    runtime = Runtime([CountingEngine()], task_of=_task_by_last_digit)
    runtime.process([given], T0)
    assert [m.producer for m in runtime.take_misplaced()] == ["s" * 200]
