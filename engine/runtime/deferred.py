"""Costly subjects a batch left undecided, so that the records polled after them are decided first (platform
P15). The batch that changed such a subject committed its new state; its decision follows in a later turn, with
what it would have had in that batch: the state to revert to if it fails, the records to dead-letter then, and
the trace context its records carry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.runtime.batch import Batch
from engine.runtime.records import InputRecord
from engine.runtime.tracecontext import TraceContext

__all__ = ["DeferredSubjects"]


@dataclass(slots=True)
class _Deferred:
    before: Any
    causes: list[InputRecord]
    trace: TraceContext | None


class DeferredSubjects:
    """The costly subjects left undecided, by key."""

    def __init__(self) -> None:
        self._by_key: dict[str, _Deferred] = {}

    def defer(self, batch: Batch, keys: list[str], states: Mapping[str, Any]) -> None:
        """Leave `keys` undecided, taking their records and trace context out of `batch`; a subject still left
        from an earlier batch keeps the state to revert to from then."""
        for key in keys:
            causes = batch.causes.pop(key, [])
            trace = batch.traces.get(key)
            earlier = self._by_key.get(key)
            if earlier is None:
                self._by_key[key] = _Deferred(batch.before.get(key, states.get(key)), causes, trace)
            else:
                earlier.causes += causes
                earlier.trace = trace or earlier.trace

    def resume(self, batch: Batch, key: str) -> None:
        """Put what a deferred subject's decision needs into `batch` (nothing when `key` was not deferred)."""
        deferred = self._by_key.pop(key, None)
        if deferred is None:
            return
        batch.before[key], batch.causes[key] = deferred.before, deferred.causes
        if deferred.trace is not None:
            batch.traces[key] = deferred.trace

    def by_task(self, states: Mapping[str, Any], task_of: Callable[[str], int]) -> dict[int, list[str]]:
        """The subjects left undecided, by task, in key order; those no longer held (deleted, handed over) are
        forgotten, as whoever holds them now decides them."""
        for key in [key for key in self._by_key if key not in states]:
            del self._by_key[key]
        found: dict[int, list[str]] = {}
        for key in sorted(self._by_key):
            found.setdefault(task_of(key), []).append(key)
        return found
