"""A persistent (copy-on-write) string-keyed mapping for partition state that grows with every application.

`PartitionState` is immutable, so adding one application used to copy the whole applications mapping:
O(active applications) per placement, quadratic over a busy partition. Here keys are spread over a fixed
number of buckets by a stable hash (CRC-32, not `hash()`, so the layout does not depend on the process), and
a change copies only the tuple of bucket references and the one bucket it touches.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = ["PersistentMap", "changed_items", "with_item", "without_item"]

V = TypeVar("V")

_WIDTH = 256
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _slot(key: str) -> int:
    return zlib.crc32(key.encode()) & (_WIDTH - 1)


class PersistentMap(Mapping[str, V], Generic[V]):
    """Immutable mapping; `set` and `delete` return new maps sharing every untouched bucket."""

    __slots__ = ("_buckets", "_size")

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        buckets: list[dict[str, V]] = [{} for _ in range(_WIDTH)] if items else []
        for key, value in (items or {}).items():
            buckets[_slot(key)][key] = value
        self._buckets: tuple[Mapping[str, V], ...] = (
            tuple(bucket or _EMPTY for bucket in buckets) if buckets else (_EMPTY,) * _WIDTH
        )
        self._size = len(items) if items else 0

    @classmethod
    def _of(cls, buckets: tuple[Mapping[str, V], ...], size: int) -> PersistentMap[V]:
        made: PersistentMap[V] = cls.__new__(cls)
        made._buckets, made._size = buckets, size
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
        buckets = list(self._buckets)
        buckets[slot] = bucket
        return self._of(tuple(buckets), size)

    def delete(self, key: str) -> PersistentMap[V]:
        """A new map without `key` (this map when the key is absent)."""
        slot = _slot(key)
        if key not in self._buckets[slot]:
            return self
        bucket = dict(self._buckets[slot])
        del bucket[key]
        buckets = list(self._buckets)
        buckets[slot] = bucket or _EMPTY
        return self._of(tuple(buckets), self._size - 1)


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
    removed ones. Two persistent maps are compared only in the buckets they do not share, so the cost follows
    the size of the change, not of the maps."""
    if isinstance(old, PersistentMap) and isinstance(new, PersistentMap):
        pairs = [
            (before, after) for before, after in zip(old._buckets, new._buckets, strict=True) if before is not after
        ]
    else:
        pairs = [(old, new)]
    changes: list[tuple[str, V | None]] = []
    for before, after in pairs:
        changes.extend((key, value) for key, value in after.items() if before.get(key) != value)
        changes.extend((key, None) for key in before if key not in after)
    changes.sort(key=lambda item: item[0])
    return changes
