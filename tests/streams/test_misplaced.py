"""Misplaced subject records: every one counted, each topic and producer logged once, the logged set bounded."""

from __future__ import annotations

import logging

import pytest

from engine.runtime import Misplaced
from streams.metrics import Metrics
from streams.misplaced import MAX_LOGGED_PRODUCERS, MisplacedRecords


def _count(metrics: Metrics, topic: str) -> float:
    value = metrics.registry.get_sample_value("placement_misplaced_records_total", {"topic": topic})
    return value or 0.0


@pytest.mark.parametrize(
    ("records", "counted", "logged"),
    [
        ([Misplaced("subs", "/a", 1, 0)] * 50, {"subs": 50}, [("subs", "/a")]),
        (
            [Misplaced("subs", "/a", 1, 0), Misplaced("subs", "/b", 2, 0), Misplaced("recs", "/a", 1, 2)] * 3,
            {"subs": 6, "recs": 3},
            [("subs", "/a"), ("subs", "/b"), ("recs", "/a")],
        ),
        (
            [Misplaced("subs", "", 0, 1)] * 2,
            {"subs": 2},
            [("subs", "(unnamed: a tombstone or an event without source)")],
        ),
    ],
    ids=["one-producer", "per-topic-and-producer", "unnamed"],
)
def test_counted_per_record_logged_per_topic_and_producer(
    records: list[Misplaced], counted: dict[str, int], logged: list[tuple[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    tracker = MisplacedRecords(metrics)
    with caplog.at_level(logging.ERROR, logger="placement.service"):
        tracker.note(records[: len(records) // 2])
        tracker.note(records[len(records) // 2 :])
    assert {topic: _count(metrics, topic) for topic in counted} == counted
    assert [(r.topic, r.producer) for r in caplog.records] == logged  # type: ignore[attr-defined]
    first = caplog.records[0]
    assert "murmur2_random" in first.fix  # type: ignore[attr-defined]
    assert (first.expected_partition, first.arrival_partition) == (records[0].expected, records[0].arrived)  # type: ignore[attr-defined]


def test_the_logged_producers_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics()
    tracker = MisplacedRecords(metrics)
    many = [Misplaced("subs", f"/p{i}", 0, 1) for i in range(MAX_LOGGED_PRODUCERS + 500)]
    with caplog.at_level(logging.ERROR, logger="placement.service"):
        tracker.note(many)
        tracker.note(many)
    assert len(caplog.records) == MAX_LOGGED_PRODUCERS + 1, "one line per producer up to the bound, then one more"
    assert "counted, not logged" in caplog.records[-1].getMessage()
    assert _count(metrics, "subs") == 2 * len(many)
