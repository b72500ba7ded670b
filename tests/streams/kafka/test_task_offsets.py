"""Task offsets records: the format, and how the changelog readers treat them."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from aiokafka import ConsumerRecord, TopicPartition

from engine.errors import InvalidStateError
from streams.kafka.group_offsets import WRITER_HEADER
from streams.kafka.tables import UnreadableEntries, changelog_sink, entry_kind
from streams.kafka.task_offsets import (
    TaskOffsetsError,
    decode_task_offsets,
    encode_task_offsets,
    is_task_offsets_key,
    task_offsets_key,
)

SUBMISSIONS = TopicPartition("placement.submissions", 2)
RECOMMENDATIONS = TopicPartition("placement.advisor-recommendations", 2)


def _record(
    key: bytes, value: bytes | None, offset: int = 0, headers: list[tuple[str, bytes]] | None = None
) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("placement.state-changelog", 2, offset, 0, 0, key, value, None, 0, 0, headers or [])


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


def test_the_restore_tells_records_of_0_1_0_from_this_versions() -> None:
    """0.1.0's records carry no header; their offsets are its group commits' (group_offsets.py)."""
    records = [
        _record(task_offsets_key(2), encode_task_offsets({SUBMISSIONS: 4}), 1),
        _record(task_offsets_key(2), encode_task_offsets({SUBMISSIONS: 6, RECOMMENDATIONS: 1}), 2),
        _record(task_offsets_key(2), encode_task_offsets({SUBMISSIONS: 9}), 3, [WRITER_HEADER]),
    ]
    gathered: dict[TopicPartition, int] = {}
    legacy: dict[TopicPartition, set[int]] = {}
    changelog_sink(lambda key, value: None, "entry", gathered, legacy_offsets=legacy)(records)
    assert gathered == {SUBMISSIONS: 9, RECOMMENDATIONS: 1}
    assert legacy == {SUBMISSIONS: {4, 6}, RECOMMENDATIONS: {1}}


def _refuse(key: str, value: bytes | None) -> None:
    raise InvalidStateError(f"changelog entry {key} cannot be read")


def test_unreadable_entries_are_logged_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    newer = orjson.dumps({"kind": "placement", "v": 2, "state": {}})
    records = [
        *(_record(f"Placement/ns/p{i}".encode(), newer, i) for i in range(50)),
        *(_record(f"~new-kind/{i}".encode(), b"x", 100 + i) for i in range(50)),
        *(_record(task_offsets_key(2), b"garbage", 200 + i) for i in range(50)),
    ]
    unreadable = UnreadableEntries()
    with caplog.at_level(logging.DEBUG, logger="placement.tables"):
        for _ in range(2):  # a second restore of the same task logs nothing more
            changelog_sink(_refuse, "changelog entry", {}, unreadable=unreadable)(records)
    kinds = [r.__dict__["kind"] for r in caplog.records]
    assert kinds == ["placement v2", "key ~new-kind/...", "task offsets"]
    assert unreadable.skipped == {"placement v2": 100, "key ~new-kind/...": 100, "task offsets": 100}


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        (b"Placement/ns/p", orjson.dumps({"kind": "placement", "v": 1, "state": None}), "placement v1"),
        (b"Placement/ns/p", b"not json", "key Placement/..."),
        (b"Application/default", orjson.dumps([1]), "key Application/..."),
        (b"\xff\xfe", None, "key \ufffd\ufffd/..."),
        (task_offsets_key(1), b"[", "task offsets"),
    ],
)
def test_entry_kind(key: bytes, value: bytes | None, kind: str) -> None:
    assert entry_kind(key, value) == kind
