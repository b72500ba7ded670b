"""Records an instance already committed are not decided again when they are fetched a second time."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord, TopicPartition

from streams.consumed import Records, without_processed

A, B = TopicPartition("subs", 0), TopicPartition("subs", 1)


def _polled(**ranges: tuple[int, int]) -> Records:
    tps = {"a": A, "b": B}
    return {
        tps[name]: [ConsumerRecord("subs", tps[name].partition, o, 0, 0, b"k", b"v", None, 1, 1, ()) for o in range(*r)]
        for name, r in ranges.items()
    }


@pytest.mark.parametrize(
    ("polled", "floors", "kept", "dropped"),
    [
        (_polled(a=(5, 8)), {A: 5}, {A: [5, 6, 7]}, {}),  # at the committed position: all new
        (_polled(a=(3, 8)), {A: 5}, {A: [5, 6, 7]}, {A: 2}),  # fell back: the committed prefix goes
        (_polled(a=(3, 5)), {A: 5}, {A: []}, {A: 2}),  # only records already committed
        (_polled(a=(0, 3), b=(7, 9)), {B: 8}, {A: [0, 1, 2], B: [8]}, {B: 1}),  # no floor known: kept
        (_polled(a=(0, 0)), {A: 5}, {A: []}, {}),
    ],
    ids=["at-floor", "fell-back", "all-committed", "per-partition", "empty"],
)
def test_records_below_the_committed_position_are_dropped(
    polled: Records,
    floors: dict[TopicPartition, int],
    kept: dict[TopicPartition, list[int]],
    dropped: dict[TopicPartition, int],
) -> None:
    fresh, counts = without_processed(polled, floors)
    assert {tp: [r.offset for r in rs] for tp, rs in fresh.items()} == kept
    assert counts == dropped
