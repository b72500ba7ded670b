"""The subjects one instance owns: their states, the engines and their capabilities, timers and changelog memory.

Every state change goes through `Subjects.set`, which keeps the owning engine's indexes and the subject's timer
in step with the state; the runtime decides *when* states change, this class keeps everything that follows a
state consistent, and lets a failing engine call cost only its subject (`isolated`). Restoring from the
changelog and handing subjects over in a rebalance live here too, as they change states without deciding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any

from engine.core import (
    BulkTrackingEngine,
    ConfiguredEngine,
    CostlyEngine,
    CountingEngine,
    EngineContext,
    ExplainingEngine,
    InventoryAwareEngine,
    PartedStateEngine,
    PeerAwareEngine,
    Step,
    SubjectEngine,
    TimedEngine,
)
from engine.errors import InvalidStateError
from engine.runtime.batch import Batch
from engine.runtime.changelog import ChangelogMemory, reading_entry
from engine.runtime.deadletter import dead_letter
from engine.runtime.records import Incident, InputRecord, OutputRecord
from engine.runtime.routing import split_changelog_key, subject_kind
from engine.runtime.timers import TimerQueue
from topics.codec import loads
from topics.errors import Stage, stage_of

__all__ = ["Subjects"]


class Subjects:
    """Subject states by key, with the engine of each kind and what follows each state."""

    def __init__(self, engines: Sequence[SubjectEngine[Any]]) -> None:
        self.states: dict[str, Any] = {}
        self.engines = {engine.KIND: engine for engine in engines}
        self.parted = {engine.KIND: engine for engine in engines if isinstance(engine, PartedStateEngine)}
        self.peer_aware = {engine.KIND: engine for engine in engines if isinstance(engine, PeerAwareEngine)}
        self.timed = {engine.KIND: engine for engine in engines if isinstance(engine, TimedEngine)}
        self.inventory_aware = {engine.KIND: engine for engine in engines if isinstance(engine, InventoryAwareEngine)}
        self.configured = {engine.KIND: engine for engine in engines if isinstance(engine, ConfiguredEngine)}
        self.bulk_tracking = [engine for engine in engines if isinstance(engine, BulkTrackingEngine)]
        self.costly = {engine.KIND: engine for engine in engines if isinstance(engine, CostlyEngine)}
        self.timers = TimerQueue()
        self.changelog = ChangelogMemory()
        self.incidents: list[Incident] = []
        """Failures isolated since the runtime last took them, for logs and metrics."""

    def is_costly(self, key: str) -> bool:
        """Whether the subject's engine expects its decision to be costly (`CostlyEngine`); False when absent."""
        engine = self.costly.get(subject_kind(key))
        state = self.states.get(key)
        return engine is not None and state is not None and engine.costly(key, state)

    def engine_for(self, key: str) -> SubjectEngine[Any]:
        """The engine owning a subject key."""
        return self.engines[subject_kind(key)]

    def set(self, engine: SubjectEngine[Any], key: str, state: Any) -> None:
        """Make `state` the subject's state (None: it is gone), with the engine's indexes and its timer."""
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state
        engine.track(key, state)
        timed = self.timed.get(engine.KIND)
        if timed is not None:  # only timed engines' subjects ever have a timer
            self.timers.arm(key, timed.next_due(state) if state is not None else None)

    def changelog_entries(self, key: str) -> list[OutputRecord]:
        """The changelog records that bring the changelog to the subject's state now."""
        engine = self.engine_for(key)
        return self.changelog.entries(key, self.states.get(key), engine, self.parted.get(engine.KIND))

    def explain(self, key: str, ctx: EngineContext) -> dict[str, Any] | None:
        """The owning engine's explain data of a subject; None when not held here or the engine cannot explain."""
        state = self.states.get(key)
        engine = None if state is None else self.engine_for(key)
        if not isinstance(engine, ExplainingEngine):
            return None
        return engine.explain(key, state, ctx)

    def counters(self) -> dict[str, int]:
        """The engines' metric totals by name (`CountingEngine`), summed over engines."""
        totals: dict[str, int] = {}
        for engine in self.engines.values():
            if isinstance(engine, CountingEngine):
                for name, value in engine.counters().items():
                    totals[name] = totals.get(name, 0) + value
        return totals

    def take_notices(self) -> list[tuple[str, str]]:
        """The engines' notices since the last call (`CountingEngine.take_notices`), engine by engine."""
        return [
            n for engine in self.engines.values() if isinstance(engine, CountingEngine) for n in engine.take_notices()
        ]

    # --- engine calls ----------------------------------------------------------------------------
    def isolated(
        self, batch: Batch, key: str, revert_to: Any, causes: Sequence[InputRecord], now: datetime
    ) -> _Isolated:
        """Let one subject's failure cost only that subject (as Kafka Streams' processing exception handler
        does): its outputs since entering are withdrawn, its state and changelog memory go back to `revert_to`,
        the records that caused it are dead-lettered at stage PROCESS, and an incident is noted. A timer of the
        reverted state that is already due is dropped, or it would fail again at once, forever; the subject's
        next successful change arms it again."""
        return _Isolated(self, batch, key, revert_to, causes, now=now)

    def take(self, batch: Batch, engine: SubjectEngine[Any], key: str, step: Step[Any], now: datetime) -> None:
        """Apply an engine's step to a subject: its records into the batch, its state, and whether the subject
        is to be decided at the end of the batch."""
        batch.before.setdefault(key, self.states.get(key))
        for emit in step.emits:
            batch.emit(key, emit, now)
        self.set(engine, key, step.state)
        batch.touched.add(key)
        if step.redecide and step.state is not None:
            batch.dirty.add(key)
        else:
            batch.dirty.discard(key)

    # --- restore and hand-over --------------------------------------------------------------------
    def restore(self, record_key: str, value: bytes | None) -> None:
        """Load one changelog entry (the last one per key wins; None is a tombstone).

        Raises:
            InvalidStateError: the key names no subject or the value cannot be read.
        """
        with self.restoring() as load:
            load(record_key, value)

    @contextmanager
    def restoring(self, restored: list[str] | None = None) -> Iterator[Callable[[str, bytes | None], None]]:
        """A loader of changelog entries, as `restore` loads one, that sets each subject's state once, on leaving:
        a restore reads a Placement's entry and then its decision's, and keeping the engine's indexes in step
        with the state between the two is work thrown away. An entry the loader refuses (InvalidStateError)
        leaves the subject as the entries before it made it. On leaving, `restored` (when given) gets the keys
        of the subjects the entries left with a state, in the order first read: the caller need not search
        every state for them."""
        loaded: dict[str, tuple[SubjectEngine[Any], Any]] = {}  # key -> engine, state so far

        def load(record_key: str, value: bytes | None) -> None:
            with reading_entry(record_key):
                key, part = split_changelog_key(record_key)
                engine = self.engine_for(key)
                held = loaded.get(key)
                loaded[key] = engine, self._load(engine, self.states.get(key) if held is None else held[1], part, value)
            if not part:
                self.changelog.restored_entry(key, value)

        try:
            yield load
        finally:
            with ExitStack() as together:
                for bulk in self.bulk_tracking:
                    together.enter_context(bulk.tracking_many())
                for key, (engine, state) in loaded.items():
                    self.set(engine, key, state)
                    self.changelog.restored(key, state)
                    if restored is not None and state is not None:
                        restored.append(key)

    def _load(self, engine: SubjectEngine[Any], state: Any, part: str, value: bytes | None) -> Any:
        """The subject's state with one changelog entry applied."""
        raw = None if value is None else loads(value)["state"]
        parted = self.parted.get(engine.KIND)
        if parted is not None:
            return parted.load_part(state, part, raw)
        if part:
            raise InvalidStateError(f"the {engine.KIND} engine keeps no state parts")
        return None if raw is None else engine.load_state(raw)

    def observe_peer(self, record_key: str, value: bytes | None) -> None:
        """Follow one changelog entry of a subject another instance owns, for engines whose decisions read such
        subjects (an engine ignores entries of subjects it owns: its own state is the newer).

        Raises:
            InvalidStateError: the key names no subject or the value cannot be read.
        """
        with reading_entry(record_key):
            key, part = split_changelog_key(record_key)
            engine = self.peer_aware.get(subject_kind(key))
            if engine is None:
                return
            engine.observe_peer(key, part, None if value is None else loads(value)["state"])

    def adopt(self, owned: Callable[[str], bool]) -> None:
        """Stop following the subjects `owned` names as peers' before their state is restored here: what was
        seen of a subject deleted meanwhile must not linger, and a restored state replaces the rest."""
        for engine in self.peer_aware.values():
            engine.adopt(owned)

    def forget(self, keys: Iterable[str]) -> None:
        """Drop subjects this instance no longer owns (no records are published); what peer-aware engines saw
        of them stays until the new owner's changelog entries arrive through `observe_peer`."""
        for key in list(keys):
            if key in self.states:
                engine = self.engine_for(key)
                peer_aware = self.peer_aware.get(engine.KIND)
                if peer_aware is not None:
                    peer_aware.release(key)
                self.set(engine, key, None)
            self.changelog.forget(key)


class _Isolated:
    """The context manager of `Subjects.isolated`: a class, not a generator, as every engine call enters one."""

    __slots__ = ("_batch", "_causes", "_key", "_mark", "_now", "_remembered", "_revert_to", "_subjects")

    def __init__(
        self,
        subjects: Subjects,
        batch: Batch,
        key: str,
        revert_to: Any,
        causes: Sequence[InputRecord],
        *,
        now: datetime,
    ) -> None:
        self._subjects, self._batch, self._key = subjects, batch, key
        self._revert_to, self._causes, self._now = revert_to, causes, now
        self._mark = len(batch.outputs)
        self._remembered = subjects.changelog.snapshot(key)

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if not isinstance(exc, Exception):  # none, or one that must stop the service (KeyboardInterrupt...)
            return False
        # an engine bug or a hostile input must not stop the service
        subjects, batch, key, causes = self._subjects, self._batch, self._key, self._causes
        del batch.outputs[self._mark :]
        subjects.set(subjects.engine_for(key), key, self._revert_to)
        subjects.timers.disarm_if_due(key, self._now)
        subjects.changelog.revert(key, self._remembered)
        stage = stage_of(exc, Stage.PROCESS)
        for record in causes:
            batch.outputs.append(dead_letter(record, stage, exc, bound_to_task=True))
        subjects.incidents.append(Incident(key, stage, exc, len(causes)))
        return True
