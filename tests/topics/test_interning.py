"""The interning pool: one instance per value, and no growth from values nothing holds any more."""

from __future__ import annotations

import threading

import pytest

from topics.interning import ByIdentity, Interner, SharedByKey


@pytest.mark.parametrize(
    "make",
    [
        lambda n: frozenset({"c1", f"c{n}"}),
        lambda n: ("c1", f"c{n}"),
        lambda n: f"cluster-{n}",
    ],
    ids=["frozenset", "tuple", "str"],
)
def test_equal_values_come_back_as_the_first_instance(make: object) -> None:
    pool: Interner[object] = Interner()
    first = pool(make(7))  # type: ignore[operator]
    again = make(7)  # type: ignore[operator]
    assert again is not first
    assert pool(again) is first


def test_a_sweep_drops_what_nothing_holds_and_keeps_what_is_held() -> None:
    pool: Interner[frozenset[str]] = Interner(floor=8)
    held = [pool(frozenset({"held", str(n)})) for n in range(5)]
    for n in range(100):
        pool(frozenset({"passing", str(n)}))
    assert len(pool) < 16
    for n, value in enumerate(held):
        assert pool(frozenset({"held", str(n)})) is value


def test_churn_leaves_the_pool_about_as_large_as_what_is_in_use() -> None:
    pool: Interner[tuple[str, int]] = Interner(floor=64)
    live = [pool(("live", n)) for n in range(200)]
    for n in range(50_000):
        pool(("gone", n))
    assert len(live) <= len(pool) <= 2 * len(live) + 64


def test_a_keyed_value_is_made_once_while_held_and_again_after_it_was_dropped() -> None:
    pool: SharedByKey[list[int]] = SharedByKey(floor=4)
    made: list[str] = []

    def make(key: str) -> list[int]:
        made.append(key)
        return [len(made)]

    held = pool.get("k", lambda: make("k"))
    assert pool.get("k", lambda: make("k")) is held
    for n in range(20):
        pool.get(n, lambda n=n: make(str(n)))  # type: ignore[misc]
    assert pool.get("k", lambda: make("k")) is held and made.count("k") == 1
    del held
    for n in range(20, 40):
        pool.get(n, lambda n=n: make(str(n)))  # type: ignore[misc]
    pool.get("k", lambda: make("k"))
    assert made.count("k") == 2, "dropped once nothing held it, so made again"


def test_threads_sharing_a_pool_through_its_sweeps_get_equal_values_and_no_errors() -> None:
    """The engine's worker thread and the event loop's (explain, peers) use the same pools."""
    pool: Interner[tuple[int, int]] = Interner(floor=64)
    errors: list[BaseException] = []

    def work(tag: int) -> None:
        try:
            for n in range(30_000):
                value = (tag, n % 2000)
                assert pool(value) == value
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(tag,)) for tag in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_by_identity_makes_a_value_once_per_objects_and_tells_equal_objects_apart() -> None:
    """Asked again about the same objects, the memo gives what it made; equal but distinct objects, or an entry
    dropped at the limit, make it again."""
    made: list[tuple[object, ...]] = []

    def make(*objects: object) -> int:
        made.append(objects)
        return len(made)

    memo: ByIdentity[int] = ByIdentity(limit=2)
    a, b = [1], [1]
    assert memo.get((a,), make) == 1
    assert memo.get((a,), make) == 1
    assert memo.get((b,), make) == 2  # equal, not the same object
    assert memo.get((a, b), make) == 3  # the limit: the two entries are dropped first
    assert memo.get((a,), make) == 4
    assert made == [(a,), (b,), (a, b), (a,)]
