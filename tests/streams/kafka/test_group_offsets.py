"""Where a task taken over starts: the group's offset lagging, an operator's reset, and 0.1.0's commits."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from streams.kafka.group_offsets import (
    GROUP_METADATA,
    WRITER_HEADER,
    Committed,
    StartPosition,
    marked,
    start_position,
    written_by_this_version,
)

OURS = GROUP_METADATA
TOOL = ""
"""What kafka-consumer-groups --reset-offsets (the admin client's alterConsumerGroupOffsets) writes, and 0.1.0."""


@pytest.mark.parametrize(
    ("group", "recorded", "legacy", "expected"),
    [
        # nothing known: from the log start
        (None, None, (), StartPosition(None)),
        # the group's alone (nothing recorded, e.g. written by a release before task offsets records)
        (Committed(40, TOOL), None, (), StartPosition(40)),
        (Committed(40, OURS), None, (), StartPosition(40)),
        # the recorded alone: the group's are missing, and brought up to it
        (None, 40, (), StartPosition(40, group_behind=True)),
        # both agree: nothing to tell apart, whoever committed
        (Committed(40, OURS), 40, (), StartPosition(40)),
        (Committed(40, TOOL), 40, (), StartPosition(40)),
        # ours, trailing the last transaction (committed once per interval): the recorded, group brought up
        (Committed(30, OURS), 40, (), StartPosition(40, group_behind=True)),
        # ours, ahead of the latest record (cannot happen from our own commits): the later
        (Committed(50, OURS), 40, (), StartPosition(50)),
        # 0.1.0's commit (no metadata) that one of its records holds: lagging, not a reset
        (Committed(30, TOOL), 40, (10, 30), StartPosition(40, group_behind=True)),
        # an operator's reset: to the earliest, back some records, forward past the recorded
        (Committed(0, TOOL), 40, (), StartPosition(0, reset=True)),
        (Committed(25, TOOL), 40, (10, 30), StartPosition(25, reset=True)),
        (Committed(90, TOOL), 40, (), StartPosition(90, reset=True)),
        # other metadata than ours is no processor's commit either
        (Committed(0, "someone"), 40, (), StartPosition(0, reset=True)),
    ],
    ids=[
        "nothing",
        "group-only-tool",
        "group-only-ours",
        "recorded-only",
        "agree-ours",
        "agree-tool",
        "ours-behind",
        "ours-ahead",
        "0.1.0-behind",
        "reset-earliest",
        "reset-back",
        "reset-forward",
        "reset-other-metadata",
    ],
)
def test_start_position(
    group: Committed | None, recorded: int | None, legacy: tuple[int, ...], expected: StartPosition
) -> None:
    assert start_position(group, recorded, legacy) == expected


def test_commits_are_marked_as_this_processors() -> None:
    tp = TopicPartition("placement.submissions", 1)
    assert marked({tp: 7}) == {tp: (7, GROUP_METADATA)}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, False),
        ([], False),
        ([("content-type", b"application/json")], False),
        ([(WRITER_HEADER[0], b"other")], False),
        ([("content-type", b"x"), WRITER_HEADER], True),
    ],
)
def test_records_of_this_version_carry_its_header(headers: list[tuple[str, bytes]] | None, expected: bool) -> None:
    assert written_by_this_version(headers) is expected
