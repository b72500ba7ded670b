"""The copy-on-write mapping behind a partition's active applications."""

from __future__ import annotations

import random
from types import MappingProxyType
from typing import Any

import pytest

from engine.queue.persistent import PersistentMap, changed_items, with_item, without_item


@pytest.mark.parametrize("size", [0, 1, 7, 300, 2000])
def test_set_and_delete_leave_the_original_untouched(size: int) -> None:
    plain = {f"app-{i}": i for i in range(size)}
    base = PersistentMap(plain)
    grown = base.set("new", -1).set("app-0", 99)
    assert dict(base) == plain and len(base) == size
    assert dict(grown) == {**plain, "new": -1, "app-0": 99} and len(grown) == size + 1 + (size == 0)
    shrunk = grown.delete("new").delete("missing")
    assert dict(shrunk) == {**plain, "app-0": 99}
    assert shrunk.delete("missing") is shrunk
    assert ("app-0" in shrunk, "new" in shrunk, 5 in shrunk) == (True, False, False)  # type: ignore[comparison-overlap]


def test_equal_to_plain_mappings_and_converted_on_first_change() -> None:
    proxy = MappingProxyType({"a": 1})
    assert PersistentMap({"a": 1}) == proxy == PersistentMap(proxy) and PersistentMap() == {}
    assert with_item(proxy, "b", 2) == {"a": 1, "b": 2} and without_item(proxy, "a") == {}
    assert PersistentMap({"a": 1}).get("z", "dflt") == "dflt"


def _grown(size: int) -> PersistentMap[int]:
    base: PersistentMap[int] = PersistentMap()
    for index in range(size):
        base = base.set(f"app-{index}", index)
    return base


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m: m, []),
        (lambda m: m.set("app-3", 3), []),  # same value: no change
        (lambda m: m.set("app-3", 30), [("app-3", 30)]),
        (lambda m: m.set("new", 1), [("new", 1)]),
        (lambda m: m.delete("app-7"), [("app-7", None)]),
        (lambda m: m.delete("app-2").set("app-1", 10).set("b", 2), [("app-1", 10), ("app-2", None), ("b", 2)]),
    ],
    ids=["same", "same-value", "changed", "added", "removed", "mixed-sorted"],
)
def test_changed_items_lists_what_turns_old_into_new(change: Any, expected: list[tuple[str, int | None]]) -> None:
    old = _grown(500)
    assert changed_items(old, change(old)) == expected


def test_changed_items_on_plain_mappings_and_from_empty() -> None:
    assert changed_items({"a": 1, "b": 2}, MappingProxyType({"b": 3, "c": 4})) == [("a", None), ("b", 3), ("c", 4)]
    assert changed_items(PersistentMap(), _grown(3)) == [("app-0", 0), ("app-1", 1), ("app-2", 2)]


def _plain_changes(old: dict[str, int], new: dict[str, int]) -> list[tuple[str, int | None]]:
    changed: list[tuple[str, int | None]] = [(key, value) for key, value in new.items() if old.get(key) != value]
    changed += [(key, None) for key in old if key not in new]
    return sorted(changed)


def test_changed_items_between_any_two_maps_of_a_long_chain() -> None:
    """Maps remember the slots changed since a base that moves up every few dozen changes; a diff between any
    two maps of one history (either direction, across base moves) must equal the plain comparison."""
    rng = random.Random(5)
    maps = [_grown(300)]
    for step in range(120):
        current = maps[-1]
        key = f"app-{rng.randrange(400)}"
        maps.append(current.delete(key) if step % 3 == 0 else current.set(key, rng.randrange(3)))
    for old in range(0, len(maps), 7):
        for new in range(0, len(maps), 5):
            expected = _plain_changes(dict(maps[old]), dict(maps[new]))
            assert changed_items(maps[old], maps[new]) == expected, (old, new)
    fork = maps[40].set("fork", 1)  # a sibling history from a shared base
    assert changed_items(maps[60], fork) == _plain_changes(dict(maps[60]), dict(fork))


def test_changed_items_back_to_the_map_one_change_came_from() -> None:
    old = _grown(50)
    assert changed_items(old.set("new", 1), old) == [("new", None)]
    assert changed_items(old.delete("app-4"), old) == [("app-4", 4)]
    assert changed_items(old.set("app-4", 4), old) == []
