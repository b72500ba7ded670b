"""A persistent (copy-on-write) string-keyed mapping for partition state that grows with every application.

`PartitionState` is immutable, so adding one application used to copy the whole applications mapping:
O(active applications) per placement, quadratic over a busy partition. Here keys are spread over a fixed
number of buckets by a stable hash (CRC-32, not `hash()`, so the layout does not depend on the process). The
256 buckets sit in 16 nodes of 16, so a change copies two 16-entry tuples and the one bucket it touches. A map
also remembers the nodes of the map it was derived from and which slots it changed since, so comparing it with
that map (the changelog's diff after each placement) looks at those buckets only, not at all of them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = ["PersistentMap", "changed_items", "with_item", "without_item"]

V = TypeVar("V")

_BITS = 4
_FAN = 1 << _BITS
"""Buckets per node and nodes per map: 256 buckets; a slot's high four bits pick its node, the low ones its
bucket there."""
_LOW = _FAN - 1
_MASK = _FAN * _FAN - 1
_TRACKED = 32
"""Changed slots a map remembers relative to its base before the base moves up to its parent: a diff against
any map in between costs at most this many buckets."""
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_EMPTY_NODE: tuple[Mapping[str, Any], ...] = (_EMPTY,) * _FAN

Node = tuple[Mapping[str, V], ...]


def _slot(key: str) -> int:
    return zlib.crc32(key.encode()) & _MASK


class PersistentMap(Mapping[str, V], Generic[V]):
    """Immutable mapping; `set` and `delete` return new maps sharing every untouched node and bucket."""

    __slots__ = ("_base", "_changed", "_last", "_nodes", "_parent", "_size")

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        self._nodes: tuple[Node[V], ...] = (_EMPTY_NODE,) * _FAN
        if items:
            buckets: list[dict[str, V]] = [{} for _ in range(_FAN * _FAN)]
            for key, value in items.items():
                buckets[_slot(key)][key] = value
            self._nodes = tuple(
                tuple(bucket or _EMPTY for bucket in buckets[start : start + _FAN])
                for start in range(0, _FAN * _FAN, _FAN)
            )
        self._size = len(items) if items else 0
        self._base: tuple[Node[V], ...] | None = None
        """The nodes of an earlier map this one was derived from (None: built from scratch)..."""
        self._changed: frozenset[int] = frozenset()
        """...and the slots in which the two may differ."""
        self._parent: tuple[Node[V], ...] | None = None
        """The nodes of the map this one was made from by one change..."""
        self._last = ""
        """...and the key it changed: the diff after one placement looks at that entry alone."""

    def _bucket(self, slot: int) -> Mapping[str, V]:
        return self._nodes[slot >> _BITS][slot & _LOW]

    def _derived(self, key: str, slot: int, bucket: Mapping[str, V], size: int) -> PersistentMap[V]:
        """A map with `bucket` at `slot`, remembering its base and changed slots (see the module docstring)."""
        nodes, high, low = self._nodes, slot >> _BITS, slot & _LOW
        node = nodes[high]
        made: PersistentMap[V] = PersistentMap.__new__(PersistentMap)
        made._nodes = (*nodes[:high], (*node[:low], bucket, *node[low + 1 :]), *nodes[high + 1 :])
        made._size, made._parent, made._last = size, nodes, key
        if self._base is not None and len(self._changed) < _TRACKED:
            made._base, made._changed = self._base, self._changed | {slot}
        else:
            made._base, made._changed = nodes, frozenset((slot,))
        return made

    def __getitem__(self, key: str) -> V:
        return self._bucket(_slot(key))[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The value or `default`."""
        return self._bucket(_slot(key)).get(key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._bucket(_slot(key))

    def __iter__(self) -> Iterator[str]:
        for node in self._nodes:
            for bucket in node:
                yield from bucket

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"PersistentMap({dict(self.items())!r})"

    def set(self, key: str, value: V) -> PersistentMap[V]:
        """A new map with `key` set to `value`."""
        slot = _slot(key)
        bucket = dict(self._bucket(slot))
        size = self._size + (key not in bucket)
        bucket[key] = value
        return self._derived(key, slot, bucket, size)

    def delete(self, key: str) -> PersistentMap[V]:
        """A new map without `key` (this map when the key is absent)."""
        slot = _slot(key)
        if key not in self._bucket(slot):
            return self
        bucket = dict(self._bucket(slot))
        del bucket[key]
        return self._derived(key, slot, bucket or _EMPTY, self._size - 1)


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
    removed ones. Two persistent maps are compared only in the nodes and buckets they do not share, and when
    one derives from the other or both from one base, only in the slots changed since, so the cost follows the
    size of the change, not of the maps."""
    pairs: Iterable[tuple[Mapping[str, V], Mapping[str, V]]]
    if isinstance(old, PersistentMap) and isinstance(new, PersistentMap):
        if new._parent is old._nodes:
            return _key_change(old, new, new._last)
        if old._parent is new._nodes:
            return _key_change(old, new, old._last)
        slots = _changed_slots(old, new)
        if slots is None:
            pairs = [
                (before, after)
                for old_node, new_node in zip(old._nodes, new._nodes, strict=True)
                if old_node is not new_node
                for before, after in zip(old_node, new_node, strict=True)
            ]
        else:
            pairs = [(old._bucket(slot), new._bucket(slot)) for slot in slots]
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


def _key_change(old: PersistentMap[V], new: PersistentMap[V], key: str) -> list[tuple[str, V | None]]:
    """`changed_items` of two maps that can differ in `key` alone (one was made from the other by one change)."""
    slot = _slot(key)
    before, after = old._bucket(slot), new._bucket(slot)
    if key in after:
        value = after[key]
        held = before.get(key)
        return [(key, value)] if held is not value and held != value else []
    return [(key, None)] if key in before else []


def _changed_slots(old: PersistentMap[V], new: PersistentMap[V]) -> frozenset[int] | None:
    """The slots in which two maps may differ, known from their bases; None when every slot may."""
    if new._base is old._nodes:
        return new._changed
    if old._base is new._nodes:
        return old._changed
    if old._base is not None and old._base is new._base:
        return old._changed | new._changed
    return None
