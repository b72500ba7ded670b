"""A persistent (copy-on-write) string-keyed mapping for partition state that grows with every application.

`PartitionState` is immutable, so adding one application used to copy the whole applications mapping:
O(active applications) per placement, quadratic over a busy partition. Here keys are spread over a fixed
number of buckets by a stable hash (CRC-32, not `hash()`, so the layout does not depend on the process), and
a change copies only the tuple of bucket references and the one bucket it touches. A map also remembers the
buckets of the map it was derived from and which slots it changed since, so comparing it with that map (the
changelog's diff after each placement) looks at those buckets only, not at all of them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = ["PersistentMap", "changed_items", "with_item", "without_item"]

V = TypeVar("V")

_WIDTH = 256
_TRACKED = 32
"""Changed slots a map remembers relative to its base before the base moves up to its parent: a diff against
any map in between costs at most this many buckets."""
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _slot(key: str) -> int:
    return zlib.crc32(key.encode()) & (_WIDTH - 1)


class PersistentMap(Mapping[str, V], Generic[V]):
    """Immutable mapping; `set` and `delete` return new maps sharing every untouched bucket."""

    __slots__ = ("_base", "_buckets", "_changed", "_size")

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        buckets: list[dict[str, V]] = [{} for _ in range(_WIDTH)] if items else []
        for key, value in (items or {}).items():
            buckets[_slot(key)][key] = value
        self._buckets: tuple[Mapping[str, V], ...] = (
            tuple(bucket or _EMPTY for bucket in buckets) if buckets else (_EMPTY,) * _WIDTH
        )
        self._size = len(items) if items else 0
        self._base: tuple[Mapping[str, V], ...] | None = None
        """The buckets of an earlier map this one was derived from (None: built from scratch)..."""
        self._changed: frozenset[int] = frozenset()
        """...and the slots in which the two may differ."""

    def _derived(self, slot: int, bucket: Mapping[str, V], size: int) -> PersistentMap[V]:
        """A map with `bucket` at `slot`, remembering its base and changed slots (see the module docstring)."""
        buckets = list(self._buckets)
        buckets[slot] = bucket
        made: PersistentMap[V] = PersistentMap.__new__(PersistentMap)
        made._buckets, made._size = tuple(buckets), size
        if self._base is not None and len(self._changed) < _TRACKED:
            made._base, made._changed = self._base, self._changed | {slot}
        else:
            made._base, made._changed = self._buckets, frozenset((slot,))
        return made

    def __getitem__(self, key: str) -> V:
        return self._buckets[_slot(key)][key]

    def get(self, key: str, default: Any = None) -> Any:
        """The value or `default`."""
        return self._buckets[_slot(key)].get(key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._buckets[_slot(key)]

    def __iter__(self) -> Iterator[str]:
        for bucket in self._buckets:
            yield from bucket

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"PersistentMap({dict(self.items())!r})"

    def set(self, key: str, value: V) -> PersistentMap[V]:
        """A new map with `key` set to `value`."""
        slot = _slot(key)
        bucket = dict(self._buckets[slot])
        size = self._size + (key not in bucket)
        bucket[key] = value
        return self._derived(slot, bucket, size)

    def delete(self, key: str) -> PersistentMap[V]:
        """A new map without `key` (this map when the key is absent)."""
        slot = _slot(key)
        if key not in self._buckets[slot]:
            return self
        bucket = dict(self._buckets[slot])
        del bucket[key]
        return self._derived(slot, bucket or _EMPTY, self._size - 1)


def with_item(mapping: Mapping[str, V], key: str, value: V) -> PersistentMap[V]:
    """`mapping` plus one entry, as a persistent map (any other mapping is converted once)."""
    base = mapping if isinstance(mapping, PersistentMap) else PersistentMap(mapping)
    return base.set(key, value)


def without_item(mapping: Mapping[str, V], key: str) -> PersistentMap[V]:
    """`mapping` minus one entry, as a persistent map."""
    base = mapping if isinstance(mapping, PersistentMap) else PersistentMap(mapping)
    return base.delete(key)


def changed_items(old: Mapping[str, V], new: Mapping[str, V]) -> list[tuple[str, V | None]]:
    """What turns `old` into `new`, sorted by key: (key, value) for added or changed entries, (key, None) for
    removed ones. Two persistent maps are compared only in the buckets they do not share, and when one derives
    from the other or both from one base, only in the slots changed since, so the cost follows the size of the
    change, not of the maps."""
    pairs: Iterable[tuple[Mapping[str, V], Mapping[str, V]]]
    if isinstance(old, PersistentMap) and isinstance(new, PersistentMap):
        slots = _changed_slots(old, new)
        if slots is None:
            pairs = [(a, b) for a, b in zip(old._buckets, new._buckets, strict=True) if a is not b]
        else:
            pairs = [(old._buckets[slot], new._buckets[slot]) for slot in slots]
    else:
        pairs = [(old, new)]
    changes: list[tuple[str, V | None]] = []
    for before, after in pairs:
        if before is after:
            continue
        for key, value in after.items():
            held = before.get(key)
            if held is not value and held != value:
                changes.append((key, value))
        changes.extend((key, None) for key in before if key not in after)
    changes.sort(key=lambda item: item[0])
    return changes


def _changed_slots(old: PersistentMap[V], new: PersistentMap[V]) -> frozenset[int] | None:
    """The slots in which two maps may differ, known from their bases; None when every slot may."""
    if new._base is old._buckets:
        return new._changed
    if old._base is new._buckets:
        return old._changed
    if old._base is not None and old._base is new._base:
        return old._changed | new._changed
    return None
