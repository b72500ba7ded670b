"""Which task partition a subject key belongs to: one key at a time and many at once agree with the Java client."""

from __future__ import annotations

import random
import string

import pytest

from streams.kafka.tasks import partition_of, partitions_of

JAVA_MURMUR2 = [  # the Java client's own test vectors of Utils.murmur2, as signed 32-bit ints
    ("21", -973932308),
    ("foobar", -790332482),
    ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ("abc", 479470107),
]


@pytest.mark.parametrize(("key", "hashed"), JAVA_MURMUR2)
def test_both_ways_give_the_java_clients_hash(key: str, hashed: int) -> None:
    whole = 2**31  # a modulus that keeps every positive hash as it is
    assert partition_of(key, whole) == partitions_of([key], whole)[0] == hashed & 0x7FFFFFFF


def _keys() -> list[str]:
    rng = random.Random(24)
    alphabet = string.printable + "äßé漢字🙂"
    short = ["", "a", "ab", "abc", "abcd", "abcde", "é", "日本語", "🙂"]
    subjects = [f"Placement/ns-{i % 40:02d}/p-{i:05d}" for i in range(300)]
    shuffled = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    return short + subjects + shuffled


@pytest.mark.parametrize("partitions", [1, 2, 6, 7, 64, 1000])
def test_many_at_once_agree_with_one_at_a_time_in_order(partitions: int) -> None:
    keys = _keys()
    assert partitions_of(keys, partitions) == [partition_of(key, partitions) for key in keys]


def test_no_keys_have_no_partitions() -> None:
    assert partitions_of([], 6) == []
