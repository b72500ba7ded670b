"""Task offsets records: the format, and how the changelog readers treat them."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import ConsumerRecord, TopicPartition

from streams.kafka.tables import changelog_sink
from streams.kafka.task_offsets import (
    TaskOffsetsError,
    decode_task_offsets,
    encode_task_offsets,
    is_task_offsets_key,
    task_offsets_key,
)

SUBMISSIONS = TopicPartition("placement.submissions", 2)
RECOMMENDATIONS = TopicPartition("placement.advisor-recommendations", 2)


def _record(key: bytes, value: bytes | None, offset: int = 0) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("placement.state-changelog", 2, offset, 0, 0, key, value, None, 0, 0, [])


@pytest.mark.parametrize("offsets", [{SUBMISSIONS: 7}, {SUBMISSIONS: 7, RECOMMENDATIONS: 0}, {SUBMISSIONS: 2**62}])
def test_offsets_survive_the_round_trip(offsets: dict[TopicPartition, int]) -> None:
    assert decode_task_offsets(encode_task_offsets(offsets)) == offsets


@pytest.mark.parametrize("value", [b"", b"{}", b"[[1]]", b'[["t", "x", 1]]', b"[1, 2]", b"not json"])
def test_an_unreadable_offsets_value_is_a_typed_error(value: bytes) -> None:
    with pytest.raises(TaskOffsetsError):
        decode_task_offsets(value)


@pytest.mark.parametrize(
    ("key", "expected"),
    [(task_offsets_key(3), True), (b"Application/default", False), (b"Placement/ns/p/decision", False)],
)
def test_no_subject_key_is_an_offsets_key(key: bytes, expected: bool) -> None:
    assert is_task_offsets_key(key) is expected


def test_the_restore_gathers_the_latest_offsets_and_peers_skip_them() -> None:
    applied: list[tuple[str, Any]] = []
    records = [
        _record(b"Application/default", b"{}", 0),
        _record(task_offsets_key(2), encode_task_offsets({SUBMISSIONS: 4}), 1),
        _record(task_offsets_key(2), encode_task_offsets({SUBMISSIONS: 9}), 2),
        _record(task_offsets_key(2), b"garbage", 3),  # skipped and logged, the earlier ones stay
    ]
    gathered: dict[TopicPartition, int] = {}
    changelog_sink(lambda key, value: applied.append((key, value)), "entry", gathered)(records)
    assert gathered == {SUBMISSIONS: 9}
    assert applied == [("Application/default", b"{}")]
    applied.clear()
    changelog_sink(lambda key, value: applied.append((key, value)), "peer entry")(records)
    assert applied == [("Application/default", b"{}")]
