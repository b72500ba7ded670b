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
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.core import (
    Emit,
    EngineContext,
    EngineSettings,
    PooledEngine,
    Step,
    SubjectEngine,
)
from engine.errors import MisplacedRecordError, RoutingError
from engine.inventory import Inventory, InventoryChange
from engine.runtime.batch import Batch
from engine.runtime.deadletter import dead_letter
from engine.runtime.deferred import DeferredSubjects
from engine.runtime.inputs import apply_inventory_record, producer_of, read_subject_record
from engine.runtime.records import Handover, Incident, InputRecord, Misplaced, OutputRecord
from engine.runtime.routing import (
    subject_kind,
)
from engine.runtime.subjects import Subjects
from engine.runtime.tracecontext import TraceContext, from_envelope, from_headers, from_record
from topics.errors import Stage, stage_of
from topics.interning import Interning
from topics.names import TopicRole

__all__ = ["DECIDE_CHUNK", "Runtime"]

DECIDE_CHUNK = 64
"""Subjects decided between two hand-overs: a re-decision of thousands of large cluster placements is sent
while it runs, and a hand-over (swapping the output list) costs nothing next to 64 decisions."""

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
        self.interning = Interning()
        """The pools of this runtime (topics/interning.py): the decoder's and its engines', shared with no other."""
        for engine in engines:
            if isinstance(engine, PooledEngine):
                engine.use_interning(self.interning)
        self.subjects = Subjects(engines)
        self.decided_subjects = 0
        """Decisions run so far: one per dirty subject per batch and one per timer fired."""
        self.dead_letter_inventory = dead_letter_inventory
        """Only one instance dead-letters bad global-table records, or every instance would."""
        self._task_of: Callable[[str], int] = task_of or _one_task
        """The task (input partition) owning a subject; replay runs everything as one task."""
        self._placed_by = task_of
        """Given, a subject record is applied only from its task's partition (P3); replay has one task."""
        self.misplaced: list[Misplaced] = []
        """Subject records refused for their partition since the service last took them (`take_misplaced`)."""
        self._deferred = DeferredSubjects()
        """Costly subjects a batch left undecided for a later turn (`process_chunks(defer_costly=True)`)."""
        if config is not None:  # the configuration active at start (the service's queue file)
            for configured in self.subjects.configured.values():
                configured.configure(config)

    @property
    def states(self) -> dict[str, Any]:
        """Subject states by key (`Subjects.states`)."""
        return self.subjects.states

    # --- context, lookups -------------------------------------------------------------------------
    def context(self, now: datetime, clock: datetime | None = None) -> EngineContext:
        """The engine context at `now`; `clock` is the batch's later clock when a timer runs late (EngineContext)."""
        return EngineContext(now=now, inventory=self.inventory, settings=self.settings, clock=clock)

    def engine_for(self, key: str) -> SubjectEngine[Any]:
        """The engine owning a subject key."""
        return self.subjects.engine_for(key)

    def explain(self, key: str, now: datetime) -> dict[str, Any] | None:
        """How a subject's decision comes about at `now`; None for subjects not held here (a malformed key names
        none) or engines without explain. Callers normalise user input with `routing.explain_key` first."""
        return self.subjects.explain(key, self.context(now))

    def next_timer(self) -> datetime | None:
        """The earliest pending timer instant, if any."""
        return self.subjects.timers.next()

    def counters(self) -> dict[str, int]:
        """The engines' metric totals by name (`CountingEngine`), summed over engines."""
        return self.subjects.counters()

    def take_notices(self) -> list[tuple[str, str]]:
        """(subject key, message) of what the engines ask the operator to read since the last call."""
        return self.subjects.take_notices()

    def take_incidents(self) -> list[Incident]:
        """The failures isolated since the last call: each one cost a dead letter or a skipped decision."""
        taken, self.subjects.incidents = self.subjects.incidents, []
        return taken

    def take_misplaced(self) -> list[Misplaced]:
        """The subject records refused for arriving off their key's partition since the last call."""
        taken, self.misplaced = self.misplaced, []
        return taken

    # --- batches ----------------------------------------------------------------------------------
    def process(self, records: Sequence[InputRecord], now: datetime) -> list[OutputRecord]:
        """Apply a batch of consumed records (inventory and subject records, in order)."""
        return _joined(self.process_chunks(records, now))

    def process_chunks(
        self, records: Sequence[InputRecord], now: datetime, *, defer_costly: bool = False
    ) -> Iterator[Handover]:
        """`process`, handing the outputs over in chunks; the batch is only complete once exhausted. With
        `defer_costly`, costly subjects are left undecided (`deferred_keys`) for the caller to re-decide in a later
        turn, after the records polled meanwhile (platform P15)."""
        batch = Batch("|".join([f"{r.topic}:{r.partition}:{r.offset}" for r in records]))
        ctx = self.context(now)
        changes: list[InventoryChange] = []
        inventory_trace: TraceContext | None = None
        for record in records:
            if record.topic in _INVENTORY_TOPICS:
                changes += self._apply_inventory(batch, record, now)
                inventory_trace = from_record(record) or inventory_trace
            elif record.topic in _SUBJECT_TOPICS:
                self._apply_subject(batch, record, ctx)
            else:
                error = RoutingError(f"the processor does not consume the {record.topic.value} topic")
                batch.outputs.append(dead_letter(record, Stage.VALIDATE, error, bound_to_task=True))
        if changes:
            for kind, engine in self.subjects.inventory_aware.items():
                try:
                    affected = engine.affected_by(changes, ctx)
                except Exception as exc:  # the change itself was applied; only the engine's re-decision is lost
                    self.subjects.incidents.append(Incident(f"{kind}/*", stage_of(exc, Stage.PROCESS), exc, 0))
                    continue
                batch.dirty.update(k for k in affected if k in self.states)
                if inventory_trace is not None:  # a subject's own record names its cause first (P16)
                    for key in affected:
                        batch.traces.setdefault(key, inventory_trace)
        yield from self._finish(batch, ctx, defer_costly=defer_costly)

    def fire_timers(self, now: datetime) -> list[OutputRecord]:
        """Run every timer due at `now`, earliest first, each at its own instant."""
        return _joined(self.fire_timer_chunks(now))

    def fire_timer_chunks(self, now: datetime) -> Iterator[Handover]:
        """`fire_timers`, handing over each timer's outputs as it runs; no task is marked finished, as the next
        timer may belong to any task (a transaction per timer would cost more than it gains). A timer runs at its own
        instant and sees `now` as the clock, so a periodic one is not run again for every period `now` skipped."""
        while (fired := self.subjects.timers.pop_due(now)) is not None:
            due, key = fired
            batch = Batch(f"timer|{key}|{due.isoformat()}")
            ctx = self.context(due, clock=now if now > due else None)
            self.decided_subjects += key in self.states
            timed = self.subjects.timed[subject_kind(key)]  # only timed engines arm timers
            self._run(batch, key, ctx, lambda _, s, k=key, c=ctx, t=timed: t.on_timer(k, s, c))
            yield from self._finish(batch, ctx, mark_finished=False)

    def redecide(self, keys: Iterable[str], now: datetime) -> list[OutputRecord]:
        """Decide the given subjects once, e.g. after restore, when the inventory may have moved on."""
        return _joined(self.redecide_chunks(keys, now))

    def redecide_chunks(self, keys: Iterable[str], now: datetime) -> Iterator[Handover]:
        """`redecide`, handing the outputs over in chunks. A deferred subject is decided with what its batch
        left it: the state to revert to, the records to dead-letter if its decision fails, its trace context."""
        batch = Batch(f"redecide|{now.isoformat()}")
        for key in keys:
            self._deferred.resume(batch, key)
            if key in self.states:
                batch.dirty.add(key)
        yield from self._finish(batch, self.context(now))

    def deferred_keys(self) -> dict[int, list[str]]:
        """The costly subjects left undecided, by task, in key order (those since deleted or handed over are
        forgotten: the next owner re-decides what it restores)."""
        return self._deferred.by_task(self.states, self._task_of)

    def reconfigure(self, config: object, now: datetime) -> list[OutputRecord]:
        """Make a new configuration active in the configured engines and let each of their subjects adapt."""
        batch = Batch(f"config|{now.isoformat()}")
        ctx = self.context(now)
        for engine in self.subjects.configured.values():
            engine.configure(config)
        for key in sorted(self.states):
            configured = self.subjects.configured.get(subject_kind(key))
            if configured is not None:
                self._run(batch, key, ctx, lambda _, s, k=key, c=ctx, e=configured: e.on_config(k, s, c))
        return _joined(self._finish(batch, ctx))

    def announce(self, emit: Emit, now: datetime) -> list[OutputRecord]:
        """Publish one event that belongs to no subject (e.g. a rejected configuration file); `emit.key` names
        what it is about."""
        batch = Batch(f"announce|{emit.kind}|{emit.key}|{now.isoformat()}")
        batch.emit(None, emit, now)
        return batch.outputs

    # --- state restore and hand-over (see Subjects) -------------------------------------------------
    def restore(self, record_key: str, value: bytes | None) -> None:
        """Load one changelog entry (`Subjects.restore`)."""
        self.subjects.restore(record_key, value)

    def restoring(
        self, restored: list[str] | None = None
    ) -> AbstractContextManager[Callable[[str, bytes | None], None]]:
        """A loader of many changelog entries, each subject's state set on leaving (`Subjects.restoring`)."""
        return self.subjects.restoring(restored)

    def observe_peer(self, record_key: str, value: bytes | None) -> None:
        """Follow a changelog entry of a subject another instance owns (`Subjects.observe_peer`)."""
        self.subjects.observe_peer(record_key, value)

    def adopt(self, owned: Callable[[str], bool]) -> None:
        """Stop following the subjects `owned` names as peers' (`Subjects.adopt`)."""
        self.subjects.adopt(owned)

    def forget(self, keys: Iterable[str]) -> None:
        """Drop subjects this instance no longer owns (`Subjects.forget`)."""
        self.subjects.forget(keys)

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
            key, event = read_subject_record(record, self.subjects.engine_for, self._placed_by, self.interning)
        except Exception as exc:  # whatever a record holds, it is dead-lettered and the batch goes on
            batch.outputs.append(dead_letter(record, stage_of(exc, Stage.VALIDATE), exc, bound_to_task=True))
            if isinstance(exc, MisplacedRecordError):
                topic = record.topic_name or record.topic.value
                self.misplaced.append(Misplaced(topic, producer_of(record.value), exc.expected, exc.arrived))
            return
        trace = from_headers(record.headers)
        if trace is None and event is not None:
            trace = from_envelope(event.envelope.model_extra)
        if trace is not None:
            batch.traces[key] = trace
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
        """Run one engine call for a subject. A failure is isolated (see `Subjects.isolated`): the subject keeps its
        state from before the call and `cause` is dead-lettered."""
        subjects = self.subjects
        state = subjects.states.get(key)
        if state is None and not allow_new:
            return
        engine = subjects.engine_for(key)
        with subjects.isolated(batch, key, state, () if cause is None else (cause,), ctx.now):
            step: Step[Any] = call(engine, state)
            subjects.take(batch, engine, key, step, ctx.now)
        if cause is not None and key in batch.touched:
            batch.causes.setdefault(key, []).append(cause)

    def _finish(
        self, batch: Batch, ctx: EngineContext, *, mark_finished: bool = True, defer_costly: bool = False
    ) -> Iterator[Handover]:
        """Decide the dirty subjects task by task, chunk by chunk, each chunk with its changelog entries, then
        write the changelog of the task's touched subjects (nothing is rewritten for those just decided) and mark
        the task finished. A subject's state is final once decided, so its entry can go at once.

        Costly subjects (`CostlyEngine`) wait until every task, their own included, is finished, so one expensive
        subject delays no other subject's commit (platform P15); each subject is still decided once."""
        task_of = self._task_of
        by_task: dict[int, _TaskWork] = {}
        for key in batch.dirty:
            work = by_task.setdefault(task_of(key), _TaskWork())
            (work.costly if self.subjects.is_costly(key) else work.dirty).append(key)
        for key in batch.touched:
            by_task.setdefault(task_of(key), _TaskWork()).touched.append(key)
        batch.dirty.clear()
        for task in sorted(by_task):
            work = by_task[task]
            yield from self._decide(batch, sorted(work.dirty), ctx)
            yield from self._close_task(batch, task, work, ctx, mark_finished)
        for task in sorted(by_task):
            costly = sorted(by_task[task].costly)
            if defer_costly:
                self._deferred.defer(batch, costly, self.states)
            else:
                yield from self._decide_costly(batch, costly, ctx)
        batch.touched.clear()
        batch.before.clear()
        batch.causes.clear()
        batch.traces.clear()
        if batch.outputs:
            yield Handover(batch.hand_over())

    def _decide(self, batch: Batch, keys: list[str], ctx: EngineContext) -> Iterator[Handover]:
        """Decide `keys` in order, handing the outputs over every `DECIDE_CHUNK` subjects."""
        for start in range(0, len(keys), DECIDE_CHUNK):
            if start and batch.outputs:
                yield Handover(batch.hand_over())
            for key in keys[start : start + DECIDE_CHUNK]:
                state = self.states.get(key)
                if state is not None:
                    engine = self.engine_for(key)
                    self.decided_subjects += 1
                    before = batch.before.get(key, state)
                    with self.subjects.isolated(batch, key, before, batch.causes.pop(key, ()), ctx.now):
                        self.subjects.take(batch, engine, key, engine.decide(key, state, ctx), ctx.now)
                        batch.outputs += self.subjects.changelog_entries(key)

    def _close_task(
        self, batch: Batch, task: int, work: _TaskWork, ctx: EngineContext, mark_finished: bool
    ) -> Iterator[Handover]:
        """Write the changelog of the task's touched subjects and hand its outputs over, marked finished. A costly
        subject's records stay its causes until it is decided: its decision may still fail and dead-letter them."""
        incidents = self.subjects.incidents
        for key in sorted(work.touched):
            waits = key in work.costly
            causes = batch.causes.get(key, ()) if waits else batch.causes.pop(key, ())
            seen = len(incidents)
            with self.subjects.isolated(batch, key, batch.before.get(key), causes, ctx.now):
                batch.outputs += self.subjects.changelog_entries(key)
            if waits and len(incidents) > seen:
                batch.causes.pop(key, None)  # dead-lettered just now
        if mark_finished:
            yield Handover(batch.hand_over(), finished=task)
        elif batch.outputs:
            yield Handover(batch.hand_over())

    def _decide_costly(self, batch: Batch, keys: list[str], ctx: EngineContext) -> Iterator[Handover]:
        """Decide a task's costly subjects after its transaction was handed over finished (platform P15): their
        outputs open the task's next transaction. A decision that fails reverts the subject to its state before
        the batch, which the finished transaction no longer holds, so its changelog is brought back to it (a
        decision that succeeds wrote its entries already)."""
        seen = len(self.subjects.incidents)
        yield from self._decide(batch, keys, ctx)
        for key in sorted({incident.subject for incident in self.subjects.incidents[seen:]}):
            with self.subjects.isolated(batch, key, batch.before.get(key, self.states.get(key)), (), ctx.now):
                batch.outputs += self.subjects.changelog_entries(key)


@dataclass(slots=True)
class _TaskWork:
    """One task's share of a batch: subjects to decide (cheap first, costly after every other task) and subjects
    whose changelog entries are due."""

    dirty: list[str] = field(default_factory=list)
    costly: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)


def _joined(chunks: Iterable[Handover]) -> list[OutputRecord]:
    return [record for chunk in chunks for record in chunk.records]


def _one_task(key: str) -> int:
    return 0
