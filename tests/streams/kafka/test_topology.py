"""The pure topic checks: partition markers, key placement, count changes, cleanup policies, emptied changelogs."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import ConsumerRecord, TopicPartition

from streams.kafka.tables import changelog_sink
from streams.kafka.task_offsets import decode_task_offsets, is_task_offsets_key
from streams.kafka.tasks import partition_of
from streams.kafka.topology import (
    MARKER_VALUE,
    REPARTITION_HELP,
    count_change,
    emptied_decisions,
    empty_changelog,
    history_problem,
    is_partitions_marker,
    marker_count,
    misplaced,
    partitions_marker,
    placing_counts,
    policy_problems,
    recorded_counts,
)

SUBJECTS = [f"Placement/apps/p{i}" for i in range(40)] + [f"Application/q{i}" for i in range(10)]


def placed(count: int, keys: list[str] = SUBJECTS, suffix: str = "") -> list[tuple[int, bytes]]:
    """(partition, key) as `count` partitions place each key's subject."""
    return [(partition_of(key, count), f"{key}{suffix}".encode()) for key in keys]


@pytest.mark.parametrize("count", [1, 4, 6, 128])
def test_a_marker_records_its_count(count: int) -> None:
    key = partitions_marker(count)
    assert is_partitions_marker(key) and marker_count(key) == count


@pytest.mark.parametrize("key", [b"Placement/apps/p", b"~task-offsets/3", b"~task-offsets/~partitions/x"])
def test_other_keys_record_no_count(key: bytes) -> None:
    assert marker_count(key) is None


def test_readers_of_task_offsets_take_nothing_from_a_marker() -> None:
    """Every version that reads task offsets records skips the marker quietly (a rollback included)."""
    assert is_task_offsets_key(partitions_marker(4))
    assert decode_task_offsets(MARKER_VALUE) == {}
    applied: list[str] = []
    offsets: dict[TopicPartition, int] = {}
    record = ConsumerRecord("changelog", 0, 0, 0, 0, partitions_marker(4), MARKER_VALUE, None, 0, 0, [])
    changelog_sink(lambda key, _value: applied.append(key), "entry", offsets)([record])
    assert applied == [] and offsets == {}


@pytest.mark.parametrize(
    ("records", "count", "wrong"),
    [
        (placed(4), 4, 0),
        (placed(4, suffix="/decision"), 4, 0),  # a part's entry is placed by its subject
        (placed(6), 6, 0),
        ([(0, b"~task-offsets/0"), (3, partitions_marker(4)), (1, b"not a subject")], 6, 0),
    ],
    ids=["as-placed", "parts", "six", "no-subjects"],
)
def test_keys_where_their_count_puts_them_are_not_misplaced(
    records: list[tuple[int, bytes]], count: int, wrong: int
) -> None:
    assert len(misplaced("t", records, count)) == wrong


def test_keys_written_with_four_partitions_are_misplaced_under_six() -> None:
    found = misplaced("decisions", placed(4), 6)
    assert found, "most keys move when 4 partitions become 6"
    assert all(m.expected == partition_of(m.key, 6) != m.partition for m in found)
    assert 4 in placing_counts(placed(4)) and 6 not in placing_counts(placed(4))


@pytest.mark.parametrize(
    ("markers", "wrong", "needle"),
    [
        ({0: {4}, 1: {4}}, False, "built with 4 partitions"),
        ({0: {6}, 4: {4}}, False, "partition 4: [4]"),
        ({}, True, "hold keys placed for another partition count"),
    ],
    ids=["old-markers", "mixed-markers", "placement"],
)
def test_a_count_the_state_was_not_built_with_is_refused(
    markers: dict[int, set[int]], wrong: bool, needle: str
) -> None:
    misplaced_keys = misplaced("decisions", placed(4), 6) if wrong else []
    problem = history_problem("changelog", 6, markers, misplaced_keys, placing_counts(placed(4)) if wrong else [])
    assert problem is not None and needle in problem and REPARTITION_HELP in problem


def test_the_state_built_with_the_count_is_accepted() -> None:
    markers = recorded_counts([(p, partitions_marker(6)) for p in range(6)] + [(0, b"Placement/a/b")])
    assert markers == {p: {6} for p in range(6)}
    assert history_problem("changelog", 6, markers, misplaced("changelog", placed(6), 6), []) is None


@pytest.mark.parametrize(
    ("found", "needles"),
    [
        ({"sub": 4, "dec": 4}, None),
        ({"sub": 6, "dec": 4}, ["partition count changed: sub 4 -> 6"]),
        ({"sub": 4, "dec": None}, ["topic deleted: dec"]),
        ({"sub": 6}, ["topic deleted: dec", "sub 4 -> 6"]),
    ],
    ids=["same", "added", "deleted", "both"],
)
def test_a_change_under_the_running_tasks_is_named(found: dict[str, int | None], needles: list[str] | None) -> None:
    problem = count_change({"sub": 4, "dec": 4}, found)
    if needles is None:
        assert problem is None
    else:
        assert problem is not None and REPARTITION_HELP in problem
        assert all(needle in problem for needle in needles)


@pytest.mark.parametrize(
    ("policies", "refused"),
    [
        ({"changelog": "compact", "decisions": "compact"}, []),
        ({"changelog": "delete", "decisions": "compact"}, ["changelog"]),
        ({"changelog": "compact,delete", "decisions": None}, ["changelog", "decisions"]),
    ],
)
def test_a_state_topic_that_is_not_compacted_is_refused(policies: dict[str, Any], refused: list[str]) -> None:
    problems = policy_problems(policies)
    assert [p.split()[1] for p in problems] == refused
    assert all("--add-config cleanup.policy=compact" in p for p in problems)


@pytest.mark.parametrize(
    ("committed", "ends", "empty"),
    [
        ({}, {0: 0, 1: 0}, None),  # a new group: nothing is lost
        ({0: 12}, {0: 30, 1: 0}, None),  # partition 1 never committed
        ({0: 12, 1: 3}, {0: 30, 1: 0}, "[1]"),
        ({0: 12, 1: 3}, {0: 0, 1: 0}, "[0, 1]"),
    ],
)
def test_an_emptied_changelog_is_refused_where_the_group_committed(
    committed: dict[int, int], ends: dict[int, int], empty: str | None
) -> None:
    problem = empty_changelog("changelog", committed, ends)
    if empty is None:
        assert problem is None
    else:
        assert problem is not None and f"partitions {empty}" in problem and "PLACEMENT_ACCEPT_EMPTY_STATE" in problem


@pytest.mark.parametrize(
    ("keys", "ends", "empty"),
    [
        ([(0, b"Placement/a/web/decision")], {0: 12}, None),
        ([(0, b"Placement/a/web/decision")], {0: 0}, "[0]"),
        ([(1, b"Application/default/apps/a1")], {0: 0, 1: 0}, "[1]"),
        ([(0, b"Placement/a/web"), (0, b"PlacementRule/a/r"), (0, b"~task-offsets/0")], {0: 0}, None),
    ],
    ids=["published", "emptied", "application", "nothing-published"],
)
def test_an_emptied_decisions_topic_is_refused_where_decisions_were_published(
    keys: list[tuple[int, bytes]], ends: dict[int, int], empty: str | None
) -> None:
    problem = emptied_decisions("decisions", ends, keys)
    if empty is None:
        assert problem is None
    else:
        assert problem is not None and f"decisions is empty in partitions {empty}" in problem
