"""The processing path shared by the Kafka service and `replay`: records in, records out, no I/O.

One call is one batch: inputs are applied in order, every subject they touched is decided once at the end
(task by task, and in key order within a task, so the result does not depend on arrival order within the
batch), and changelog entries are written for each subject whose state changed: the whole state, or for a
`PartedStateEngine` only the parts that changed. The `*_chunks` forms hand the outputs over every
`DECIDE_CHUNK` decided subjects, so the service can put the first decisions on the wire while later ones are
still being decided, and say when a task's outputs are complete, so its transaction can commit while the next
task is decided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from engine.core import (
    ConfiguredEngine,
    CountingEngine,
    Emit,
    EngineContext,
    EngineSettings,
    ExplainingEngine,
    InventoryAwareEngine,
    PartedStateEngine,
    PeerAwareEngine,
    Step,
    SubjectEngine,
    TimedEngine,
)
from engine.errors import InvalidStateError, RoutingError
from engine.inventory import Inventory, InventoryChange
from engine.runtime.batch import Batch
from engine.runtime.changelog import ChangelogMemory, reading_entry
from engine.runtime.deadletter import dead_letter
from engine.runtime.inventory_records import apply_inventory_record
from engine.runtime.records import Handover, Incident, InputRecord, OutputRecord
from engine.runtime.routing import (
    shown,
    split_changelog_key,
    subject_key_of,
    subject_kind,
)
from engine.runtime.timers import TimerQueue
from topics.codec import DecodedEvent, decode_event, encode_event, loads
from topics.envelope import CONTENT_TYPE
from topics.errors import Stage, stage_of
from topics.names import TopicRole

__all__ = ["DECIDE_CHUNK", "Runtime"]

DECIDE_CHUNK = 64
"""Subjects decided between two hand-overs: a re-decision of thousands of large cluster placements is sent
while it runs, and a hand-over (swapping the output list) costs nothing next to 64 decisions."""

_CE_HEADERS = (("content-type", CONTENT_TYPE.encode()),)
_SUBJECT_TOPICS = frozenset({TopicRole.SUBMISSIONS, TopicRole.ADVISOR_RECOMMENDATIONS})
_INVENTORY_TOPICS = frozenset({TopicRole.CLUSTER_STATUS, TopicRole.TAINTS})


class Runtime:
    """Holds the inventory and the state of the subjects this instance owns, and runs the engines."""

    def __init__(
        self,
        engines: Sequence[SubjectEngine[Any]],
        settings: EngineSettings | None = None,
        config: object | None = None,
        *,
        dead_letter_inventory: bool = True,
        task_of: Callable[[str], int] | None = None,
    ) -> None:
        self.inventory = Inventory()
        self.settings = settings or EngineSettings()
        self.states: dict[str, Any] = {}
        self.decided_subjects = 0
        """Decisions run so far: one per dirty subject per batch and one per timer fired."""
        self.dead_letter_inventory = dead_letter_inventory
        """Only one instance dead-letters bad global-table records, or every instance would."""
        self.incidents: list[Incident] = []
        """Failures isolated since the caller last took them (`take_incidents`), for logs and metrics."""
        self._task_of: Callable[[str], int] = task_of or _one_task
        """The task (input partition) owning a subject; replay runs everything as one task."""
        self._engines = {engine.KIND: engine for engine in engines}
        self._parted: dict[str, PartedStateEngine] = {
            engine.KIND: engine for engine in engines if isinstance(engine, PartedStateEngine)
        }
        self._peer_aware: dict[str, PeerAwareEngine] = {
            engine.KIND: engine for engine in engines if isinstance(engine, PeerAwareEngine)
        }
        self._timed = {engine.KIND: engine for engine in engines if isinstance(engine, TimedEngine)}
        self._inventory_aware = [engine for engine in engines if isinstance(engine, InventoryAwareEngine)]
        self._configured = {engine.KIND: engine for engine in engines if isinstance(engine, ConfiguredEngine)}
        if config is not None:  # the configuration active at start (the service's queue file)
            for configured in self._configured.values():
                configured.configure(config)
        self._timers = TimerQueue()
        self._changelog = ChangelogMemory()

    # --- context, lookups -------------------------------------------------------------------------
    def context(self, now: datetime, clock: datetime | None = None) -> EngineContext:
        """The engine context at `now`; `clock` is the batch's later clock when a timer runs late (EngineContext)."""
        return EngineContext(now=now, inventory=self.inventory, settings=self.settings, clock=clock)

    def engine_for(self, key: str) -> SubjectEngine[Any]:
        """The engine owning a subject key."""
        return self._engines[subject_kind(key)]

    def explain(self, key: str, now: datetime) -> dict[str, Any] | None:
        """How a subject's decision comes about at `now`; None for subjects not held here (a malformed key names
        none) or engines without explain. Callers normalise user input with `routing.explain_key` first."""
        state = self.states.get(key)
        if state is None:
            return None
        engine = self.engine_for(key)
        if not isinstance(engine, ExplainingEngine):
            return None
        return engine.explain(key, state, self.context(now))

    def next_timer(self) -> datetime | None:
        """The earliest pending timer instant, if any."""
        return self._timers.next()

    def counters(self) -> dict[str, int]:
        """The engines' metric totals by name (`CountingEngine`), summed over engines."""
        totals: dict[str, int] = {}
        for engine in self._engines.values():
            if isinstance(engine, CountingEngine):
                for name, value in engine.counters().items():
                    totals[name] = totals.get(name, 0) + value
        return totals

    def take_incidents(self) -> list[Incident]:
        """The failures isolated since the last call: each one cost a dead letter or a skipped decision."""
        taken, self.incidents = self.incidents, []
        return taken

    # --- batches ----------------------------------------------------------------------------------
    def process(self, records: Sequence[InputRecord], now: datetime) -> list[OutputRecord]:
        """Apply a batch of consumed records (inventory and subject records, in order)."""
        return _joined(self.process_chunks(records, now))

    def process_chunks(self, records: Sequence[InputRecord], now: datetime) -> Iterator[Handover]:
        """`process`, handing the outputs over in chunks; the batch is only complete once exhausted."""
        batch = Batch("|".join(f"{r.topic}:{r.partition}:{r.offset}" for r in records))
        ctx = self.context(now)
        changes: list[InventoryChange] = []
        for record in records:
            if record.topic in _INVENTORY_TOPICS:
                changes += self._apply_inventory(batch, record, now)
            elif record.topic in _SUBJECT_TOPICS:
                self._apply_subject(batch, record, ctx)
            else:
                error = RoutingError(f"the processor does not consume the {record.topic.value} topic")
                batch.outputs.append(dead_letter(record, Stage.VALIDATE, error, bound_to_task=True))
        if changes:
            for engine in self._inventory_aware:
                try:
                    affected = engine.affected_by(changes, ctx)
                except Exception as exc:  # the change itself was applied; only the engine's re-decision is lost
                    kind = self._kind_of(engine)
                    self.incidents.append(Incident(f"{kind}/*", stage_of(exc, Stage.PROCESS), exc, 0))
                    continue
                batch.dirty.update(k for k in affected if k in self.states)
        yield from self._finish(batch, ctx)

    def fire_timers(self, now: datetime) -> list[OutputRecord]:
        """Run every timer due at `now`, earliest first, each at its own instant."""
        return _joined(self.fire_timer_chunks(now))

    def fire_timer_chunks(self, now: datetime) -> Iterator[Handover]:
        """`fire_timers`, handing over each timer's outputs as it runs; no task is marked finished, as the next
        timer may belong to any task (a transaction per timer would cost more than it gains). A timer runs at its own
        instant and sees `now` as the clock, so a periodic one is not run again for every period `now` skipped."""
        while (fired := self._timers.pop_due(now)) is not None:
            due, key = fired
            batch = Batch(f"timer|{key}|{due.isoformat()}")
            ctx = self.context(due, clock=now if now > due else None)
            self.decided_subjects += key in self.states
            timed = self._timed[subject_kind(key)]  # only timed engines arm timers
            self._run(batch, key, ctx, lambda _, s, k=key, c=ctx, t=timed: t.on_timer(k, s, c))
            yield from self._finish(batch, ctx, mark_finished=False)

    def redecide(self, keys: Iterable[str], now: datetime) -> list[OutputRecord]:
        """Decide the given subjects once, e.g. after restore, when the inventory may have moved on."""
        return _joined(self.redecide_chunks(keys, now))

    def redecide_chunks(self, keys: Iterable[str], now: datetime) -> Iterator[Handover]:
        """`redecide`, handing the outputs over in chunks."""
        batch = Batch(f"redecide|{now.isoformat()}")
        batch.dirty.update(k for k in keys if k in self.states)
        return self._finish(batch, self.context(now))

    def reconfigure(self, config: object, now: datetime) -> list[OutputRecord]:
        """Make a new configuration active in the configured engines and let each of their subjects adapt."""
        batch = Batch(f"config|{now.isoformat()}")
        ctx = self.context(now)
        for engine in self._configured.values():
            engine.configure(config)
        for key in sorted(self.states):
            configured = self._configured.get(subject_kind(key))
            if configured is not None:
                self._run(batch, key, ctx, lambda _, s, k=key, c=ctx, e=configured: e.on_config(k, s, c))
        return _joined(self._finish(batch, ctx))

    def announce(self, emit: Emit, now: datetime) -> list[OutputRecord]:
        """Publish one event that belongs to no subject (e.g. a rejected configuration file); `emit.key` names
        what it is about."""
        batch = Batch(f"announce|{emit.kind}|{emit.key}|{now.isoformat()}")
        self._emit(batch, None, emit, now)
        return batch.outputs

    # --- state restore and hand-over --------------------------------------------------------------
    def restore(self, record_key: str, value: bytes | None) -> None:
        """Load one changelog entry (the last one per key wins; None is a tombstone).

        Raises:
            InvalidStateError: the key names no subject or the value cannot be read.
        """
        with reading_entry(record_key):
            key, part = split_changelog_key(record_key)
            engine = self.engine_for(key)
            raw = None if value is None else loads(value)["state"]
            parted = self._parted.get(engine.KIND)
            if parted is not None:
                state = parted.load_part(self.states.get(key), part, raw)
            elif part:
                raise InvalidStateError(f"the {engine.KIND} engine keeps no state parts")
            else:
                state = None if raw is None else engine.load_state(raw)
        self._set_state(engine, key, state)
        self._changelog.restored(key, part, value, state)

    def observe_peer(self, record_key: str, value: bytes | None) -> None:
        """Follow one changelog entry of a subject another instance owns, for engines whose decisions read such
        subjects (an engine ignores entries of subjects it owns: its own state is the newer).

        Raises:
            InvalidStateError: the key names no subject or the value cannot be read.
        """
        with reading_entry(record_key):
            key, part = split_changelog_key(record_key)
            engine = self._peer_aware.get(subject_kind(key))
            if engine is None:
                return
            engine.observe_peer(key, part, None if value is None else loads(value)["state"])

    def adopt(self, owned: Callable[[str], bool]) -> None:
        """Stop following the subjects `owned` names as peers' before their state is restored here: what was
        seen of a subject deleted meanwhile must not linger, and a restored state replaces the rest."""
        for engine in self._peer_aware.values():
            engine.adopt(owned)

    def forget(self, keys: Iterable[str]) -> None:
        """Drop subjects this instance no longer owns (no records are published); what peer-aware engines saw
        of them stays until the new owner's changelog entries arrive through `observe_peer`."""
        for key in list(keys):
            if key in self.states:
                engine = self.engine_for(key)
                peer_aware = self._peer_aware.get(engine.KIND)
                if peer_aware is not None:
                    peer_aware.release(key)
                self._set_state(engine, key, None)
            self._changelog.forget(key)

    # --- internals --------------------------------------------------------------------------------
    def _apply_inventory(self, batch: Batch, record: InputRecord, now: datetime) -> list[InventoryChange]:
        try:
            return apply_inventory_record(self.inventory, record, now)
        except Exception as exc:  # whatever a record holds, it is dead-lettered and the batch goes on
            if self.dead_letter_inventory:
                batch.outputs.append(dead_letter(record, stage_of(exc, Stage.VALIDATE), exc, bound_to_task=False))
            return []

    def _apply_subject(self, batch: Batch, record: InputRecord, ctx: EngineContext) -> None:
        try:
            if record.key is None:
                raise RoutingError("subject records need the subject key as record key")
            key = record.key.decode()
            engine = self._engines[subject_kind(key)]
            if record.value is None:
                event: DecodedEvent | None = None
            else:
                event = decode_event(record.value, record.topic)
                if event.kind.name not in engine.EVENTS:
                    raise RoutingError(f"{event.envelope.type} cannot be sent for subject {key}")
                named = subject_key_of(event)
                if named is not None and named != key:
                    raise RoutingError(
                        f"record key {shown(key)} does not match the subject the event names ({shown(named)})"
                    )
        except Exception as exc:  # whatever a record holds, it is dead-lettered and the batch goes on
            batch.outputs.append(dead_letter(record, stage_of(exc, Stage.VALIDATE), exc, bound_to_task=True))
            return
        if event is None:
            self._run(batch, key, ctx, lambda e, s: e.on_deleted(key, s, ctx), allow_new=True, cause=record)
        else:
            self._run(batch, key, ctx, lambda e, s: e.on_event(key, s, event, ctx), allow_new=True, cause=record)

    def _run(
        self,
        batch: Batch,
        key: str,
        ctx: EngineContext,
        call: Any,
        *,
        allow_new: bool = False,
        cause: InputRecord | None = None,
    ) -> None:
        """Run one engine call for a subject. A failure is isolated (see `_isolated`): the subject keeps its
        state from before the call and `cause` is dead-lettered."""
        if key not in self.states and not allow_new:
            return
        engine = self.engine_for(key)
        with self._isolated(batch, key, self.states.get(key), () if cause is None else (cause,), ctx.now):
            step: Step[Any] = call(engine, self.states.get(key))
            self._take(batch, engine, key, step, ctx.now)
        if cause is not None and key in batch.touched:
            batch.causes.setdefault(key, []).append(cause)

    @contextmanager
    def _isolated(
        self, batch: Batch, key: str, revert_to: Any, causes: Sequence[InputRecord], now: datetime
    ) -> Iterator[None]:
        """Let one subject's failure cost only that subject (as Kafka Streams' processing exception handler
        does): its outputs since entering are withdrawn, its state and changelog memory go back to `revert_to`,
        the records that caused it are dead-lettered at stage PROCESS, and an incident is noted. A timer of the
        reverted state that is already due is dropped, or it would fail again at once, forever; the subject's
        next successful change arms it again."""
        mark = len(batch.outputs)
        remembered = self._changelog.snapshot(key)
        try:
            yield
        except Exception as exc:  # an engine bug or a hostile input must not stop the service
            del batch.outputs[mark:]
            self._set_state(self.engine_for(key), key, revert_to)
            self._timers.disarm_if_due(key, now)
            self._changelog.revert(key, remembered)
            stage = stage_of(exc, Stage.PROCESS)
            for record in causes:
                batch.outputs.append(dead_letter(record, stage, exc, bound_to_task=True))
            self.incidents.append(Incident(key, stage, exc, len(causes)))

    def _take(self, batch: Batch, engine: SubjectEngine[Any], key: str, step: Step[Any], now: datetime) -> None:
        batch.before.setdefault(key, self.states.get(key))
        for emit in step.emits:
            self._emit(batch, key, emit, now)
        self._set_state(engine, key, step.state)
        batch.touched.add(key)
        if step.redecide and step.state is not None:
            batch.dirty.add(key)
        else:
            batch.dirty.discard(key)

    def _finish(self, batch: Batch, ctx: EngineContext, *, mark_finished: bool = True) -> Iterator[Handover]:
        """Decide the dirty subjects task by task, chunk by chunk, each chunk with its changelog entries, then
        write the changelog of the task's touched subjects (nothing is rewritten for those just decided) and mark
        the task finished. A subject's state is final once decided, so its entry can go at once."""
        task_of = self._task_of
        by_task: dict[int, tuple[list[str], list[str]]] = {}
        for key in batch.dirty:
            by_task.setdefault(task_of(key), ([], []))[0].append(key)
        for key in batch.touched:
            by_task.setdefault(task_of(key), ([], []))[1].append(key)
        batch.dirty.clear()
        for task in sorted(by_task):
            dirty, touched = by_task[task]
            dirty.sort()
            for start in range(0, len(dirty), DECIDE_CHUNK):
                if start and batch.outputs:
                    yield Handover(batch.hand_over())
                for key in dirty[start : start + DECIDE_CHUNK]:
                    state = self.states.get(key)
                    if state is not None:
                        engine = self.engine_for(key)
                        self.decided_subjects += 1
                        before = batch.before.get(key, state)
                        with self._isolated(batch, key, before, batch.causes.pop(key, ()), ctx.now):
                            self._take(batch, engine, key, engine.decide(key, state, ctx), ctx.now)
                            self._write_changelog(batch, key)
            for key in sorted(touched):
                with self._isolated(batch, key, batch.before.get(key), batch.causes.pop(key, ()), ctx.now):
                    self._write_changelog(batch, key)
            if mark_finished:
                yield Handover(batch.hand_over(), finished=task)
            elif batch.outputs:
                yield Handover(batch.hand_over())
        batch.touched.clear()
        batch.before.clear()
        batch.causes.clear()
        if batch.outputs:
            yield Handover(batch.hand_over())

    def _emit(self, batch: Batch, subject: str | None, emit: Emit, now: datetime) -> None:
        key = emit.key or subject
        if key is None:
            raise ValueError("an emit without a subject needs an explicit key")
        value = None
        if emit.kind is not None:
            value = encode_event(kind_name=emit.kind, data=emit.data, subject=key, event_id=batch.next_id(), time=now)
        headers = _CE_HEADERS if value is not None else ()
        batch.outputs.append(
            OutputRecord(topic=emit.topic, key=key.encode(), value=value, headers=headers, subject=subject)
        )

    def _set_state(self, engine: SubjectEngine[Any], key: str, state: Any) -> None:
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state
        engine.track(key, state)
        timed = self._timed.get(engine.KIND)
        self._timers.arm(key, timed.next_due(state) if timed is not None and state is not None else None)

    def _write_changelog(self, batch: Batch, key: str) -> None:
        engine = self.engine_for(key)
        state = self.states.get(key)
        batch.outputs += self._changelog.entries(key, state, engine, self._parted.get(engine.KIND))

    def _kind_of(self, engine: object) -> str:
        return next(kind for kind, known in self._engines.items() if known is engine)


def _joined(chunks: Iterable[Handover]) -> list[OutputRecord]:
    return [record for chunk in chunks for record in chunk.records]


def _one_task(key: str) -> int:
    return 0
