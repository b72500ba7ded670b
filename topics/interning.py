"""One shared instance per distinct immutable value, for what many objects hold equal copies of.

Most of a cluster placement engine's memory is repeated values: 10,000 Placements held 54 MiB of decided-cluster
sets of which 4 MiB were distinct, 20,000 condition objects of which 2 were, and a predicate, toleration or
prioritizer policy model per Placement where the workload has a few dozen distinct ones. A pool hands out one
instance per value and drops the values nothing else holds whenever it has doubled since its last sweep, so it
stays about as large as what is in use and its cost per call stays constant. A value belongs in one pool
only: two pools holding the same object would each keep it for the other, for ever.

No pool is a module global: an `Interning` holds the pools of one runtime (engine/runtime builds it and passes it
to its decoder and engines), so two runtimes in one process (replay and the service, or tests) share nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["ByIdentity", "Interner", "Interning", "SharedByKey"]

T = TypeVar("T")
H = TypeVar("H", bound=Hashable)
P = TypeVar("P")


class _Probe:
    """A fresh hashable object for a sweep to measure with."""

    __slots__ = ()


class SharedByKey(Generic[T]):
    """The instance made for a key, made once while anything holds it (`get(key, make)`)."""

    __slots__ = ("_floor", "_pool", "_sweep_at")
    _KEY_IS_VALUE = False
    """Whether each pooled value is its own key (as in `Interner`): the sweep's probe is stored the same way."""

    def __init__(self, floor: int = 1024) -> None:
        self._pool: dict[Hashable, T] = {}
        self._floor = floor
        self._sweep_at = floor

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        pooled = self._pool.get(key)
        if pooled is None:
            pooled = self._pool[key] = make()
            if len(self._pool) >= self._sweep_at:
                self._sweep()
        return pooled

    def __len__(self) -> int:
        return len(self._pool)

    def _sweep(self) -> None:
        pool = self._pool
        # a probe entry, stored as the pool stores its values, shows how many references the pool and this
        # loop account for (one more here: the `probe` name), whatever the interpreter's counting details
        probe = _Probe()
        pool[probe if self._KEY_IS_VALUE else _Probe()] = probe  # type: ignore[assignment]
        # a snapshot taken in one C call: the engine thread and the event loop's (explain, peers) share pools
        entries = list(pool.items())
        counts = [(key, value is probe, sys.getrefcount(value)) for key, value in entries]
        del entries
        floor = next(count for _, is_probe, count in counts if is_probe) - 1
        for key, is_probe, count in counts:
            if is_probe or count <= floor:
                pool.pop(key, None)
        self._sweep_at = max(self._floor, 2 * len(pool))


class Interner(SharedByKey[H]):
    """Returns the pooled instance equal to a value, pooling the value when it is new."""

    __slots__ = ()
    _KEY_IS_VALUE = True

    def __call__(self, value: H) -> H:
        return self.get(value, lambda: value)


class ByIdentity(Generic[T]):
    """A value derived from a few objects, made once while they are among the last `limit` keys asked about.

    For inputs that many holders share (pooled values, a batch's instant) but that are slow to hash or compare:
    the key is the objects' identities, and the entry holds them, so their ids name no other objects meanwhile.
    The entries are dropped all at once when `limit` is reached, so pooled objects they hold are released soon.
    """

    __slots__ = ("_limit", "_memo")

    def __init__(self, limit: int = 1024) -> None:
        self._memo: dict[tuple[int, ...], tuple[tuple[Any, ...], T]] = {}
        self._limit = limit

    def get(self, objects: tuple[Any, ...], make: Callable[..., T]) -> T:
        """`make(*objects)`, or what it gave when last asked about these very objects."""
        key = tuple(map(id, objects))
        memo = self._memo.get(key)
        if memo is not None:  # its entry holds the objects with these ids: no other live object has them
            return memo[1]
        if len(self._memo) >= self._limit:
            self._memo.clear()
        value = make(*objects)
        self._memo[key] = (objects, value)
        return value


class Interning:
    """The pools of one runtime. Each module that pools values declares a class of its pools (made with no
    arguments) and asks for the instance of this runtime with `pools(Kind)`, made on first use."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[type[Any], Any] = {}

    def pools(self, kind: type[P]) -> P:
        """This runtime's instance of `kind`."""
        made = self._made.get(kind)
        if made is None:
            made = self._made[kind] = kind()
        return made

    def kinds(self) -> tuple[type[Any], ...]:
        """The kinds of pools made so far."""
        return tuple(self._made)
