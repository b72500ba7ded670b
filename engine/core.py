"""The contract between the processing runtime and the three placement engines.

A subject (`Application/<partition>`, `Placement/<ns>/<name>`, `PlacementRule/<ns>/<name>`) has one state
object owned by one engine. The runtime feeds it events, inventory changes and timers, and publishes what
the engine emits. Engines are deterministic: time and inventory come in through `EngineContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from engine.inventory import Inventory, InventoryChange
from topics.codec import DecodedEvent
from topics.interning import Interning
from topics.names import TopicRole

__all__ = [
    "CEL_PLACEMENT_BUDGET",
    "BulkTrackingEngine",
    "ConfiguredEngine",
    "CountingEngine",
    "Emit",
    "EngineContext",
    "EngineSettings",
    "ExplainingEngine",
    "InventoryAwareEngine",
    "PartedStateEngine",
    "PeerAwareEngine",
    "PooledEngine",
    "StatePart",
    "Step",
    "SubjectEngine",
    "TimedEngine",
    "WhatIf",
    "WhatIfEngine",
]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Emit:
    """A record an engine asks to publish.

    `kind` is a catalogue name without version (`placement.decided`); `data=None` is a tombstone.
    `key` defaults to the subject key, which also routes the record to the subject's task.
    """

    kind: str | None
    data: BaseModel | None
    topic: TopicRole = TopicRole.DECISIONS
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Step(Generic[S]):
    """What one engine call produced: the new state (None: forget the subject), records, and whether
    the subject must be decided at the end of the batch (coalescing several events into one decision)."""

    state: S | None
    emits: tuple[Emit, ...] = ()
    redecide: bool = False


CEL_PLACEMENT_BUDGET = 20_000_000
"""The default of `EngineSettings.cel_placement_budget`: 4,000 units per cluster on 5,000 clusters, ten times what
a `scores()` test over ten scores costs on one (a label test costs about 5), and 20 clusters' worth of a runaway
expression stopped at its own limit."""


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Engine knobs that come from service settings; plain values so engines stay pure."""

    advisor_timeout_seconds: float = 30.0
    resync_seconds: float = 600.0
    explain: frozenset[str] = frozenset()
    """Subject keys whose decision events carry explain data (prioritizer scores, filtered clusters)."""
    cel_placement_budget: int = CEL_PLACEMENT_BUDGET
    """CEL cost units one evaluation of one placement may spend over its candidates (cluster C17)."""


@dataclass(slots=True)
class EngineContext:
    """Everything an engine may read besides its subject's state."""

    now: datetime
    inventory: Inventory
    settings: EngineSettings = field(default_factory=EngineSettings)
    clock: datetime | None = None
    """The batch's clock when it is past `now`: a timer that fell due during a jump runs at its own instant (`now`)
    while the clock already reads the jump's end. Periodic timers schedule their next run from it, so a jump fires
    each of them once instead of once per missed period. None: the clock is `now`."""


class SubjectEngine(Protocol[S]):
    """One placement engine: what every engine does. What only some do is an optional capability below (timed,
    inventory-aware, configured, parted state, peer-aware, bulk tracking, explaining, counting), which the runtime
    detects. Every method is pure apart from the engine's own in-memory indexes (kept in sync through `track`)."""

    KIND: ClassVar[str]
    """Subject-key prefix this engine owns, e.g. `Placement`."""
    EVENTS: ClassVar[frozenset[str]]
    """Catalogue names (without version) of the subject events this engine consumes."""
    KEY_SHAPE: ClassVar[str]
    """The subject key's form, `KIND/<segment>/...`: routing checks every key against it (one segment per
    placeholder, none empty) and error messages quote it."""

    @staticmethod
    def subject_of(event: DecodedEvent) -> str | None:
        """The subject key the event's payload names, so a record under another key is refused; None when the
        payload names none the runtime can compare (the engine then checks what it needs itself)."""
        ...

    def on_event(self, key: str, state: S | None, event: DecodedEvent, ctx: EngineContext) -> Step[S]:
        """Apply one subject event. Returning `redecide=True` defers the decision to the end of the batch."""
        ...

    def on_deleted(self, key: str, state: S | None, ctx: EngineContext) -> Step[S]:
        """A tombstone for the subject key arrived on the submissions topic."""
        ...

    def decide(self, key: str, state: S, ctx: EngineContext) -> Step[S]:
        """Re-decide a subject once after a batch; emit only when the published answer changes."""
        ...

    def track(self, key: str, state: S | None) -> None:
        """Keep the engine's indexes in step with a subject's state (called on every change and restore)."""
        ...

    def dump_state(self, state: S) -> dict[str, Any]:
        """The state as JSON for the compacted changelog."""
        ...

    def load_state(self, raw: Mapping[str, Any]) -> S:
        """Rebuild state from `dump_state` output; raise engine.errors.InvalidStateError if unreadable."""
        ...


@runtime_checkable
class TimedEngine(Protocol):
    """An engine whose subjects need deciding again at instants of their own (a toleration running out, an advisor
    round's deadline, a periodic resync)."""

    def on_timer(self, key: str, state: Any, ctx: EngineContext) -> Step[Any]:
        """The subject's `next_due` instant was reached (ctx.now >= due)."""
        ...

    def next_due(self, state: Any) -> datetime | None:
        """The next instant this subject needs `on_timer`, held in its state so it survives restarts."""
        ...


@runtime_checkable
class InventoryAwareEngine(Protocol):
    """An engine whose decisions read the global inventory (clusters, sets, taints, scores, deployers)."""

    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        """Subject keys an inventory change can affect; they are decided at the end of the batch."""
        ...


@runtime_checkable
class ConfiguredEngine(Protocol):
    """An engine whose decisions follow a configuration file the service watches (the queue engine's
    queues.yaml). The engine holds the active configuration, so the runtime and the context stay generic."""

    def configure(self, config: object) -> None:
        """Make `config` (in the engine's parsed form) the active configuration."""
        ...

    def on_config(self, key: str, state: Any, ctx: EngineContext) -> Step[Any]:
        """Adapt one subject to the configuration just made active."""
        ...


@runtime_checkable
class PooledEngine(Protocol):
    """An engine that shares the values its subjects repeat through pools (topics/interning.py). The pools are the
    runtime's, given once before any record: the runtime's decoder shares the events' parts through the same
    ones, and two runtimes in one process share none."""

    def use_interning(self, interning: Interning) -> None:
        """Use `interning`'s pools from now on (called by the runtime that owns them, before any record)."""
        ...


StatePart = tuple[str, dict[str, Any] | None]
"""One changelog entry of a subject: part name ("" is the subject's own entry) and JSON, None to delete."""


@runtime_checkable
class PartedStateEngine(Protocol):
    """An engine whose subject state is kept as several changelog entries, so a batch writes only the parts
    it changed instead of the whole state (a partition's applications grow without bound; a placement is
    re-decided far more often than its spec changes)."""

    def state_changes(self, old: Any, new: Any) -> Iterable[StatePart]:
        """The parts that differ between the state last written (`old`) and `new`; None means absent."""
        ...

    def load_part(self, state: Any, part: str, raw: Mapping[str, Any] | None) -> Any:
        """`state` (None: nothing yet) with one part restored or, for `raw=None`, removed; None when nothing
        is left. Raise engine.errors.InvalidStateError if `raw` is unreadable."""
        ...


@runtime_checkable
class PeerAwareEngine(Protocol):
    """An engine whose decisions read subjects that other instances own (OCM's Balance counts the decisions of
    every other placement): it follows their changelog entries without owning or deciding them."""

    def observe_peer(self, key: str, part: str, raw: Mapping[str, Any] | None) -> None:
        """A changelog entry (`part`, `raw`; None: a tombstone) of a subject another instance owns. Raise
        engine.errors.InvalidStateError if `raw` is unreadable."""
        ...

    def release(self, key: str) -> None:
        """This instance stops owning the subject (a rebalance): what peers see of it stays until its new owner
        writes. Called before the subject's state is dropped."""
        ...

    def adopt(self, owned: Callable[[str], bool]) -> None:
        """Stop following the subjects `owned` names, whose state is about to be restored here."""
        ...


@runtime_checkable
class BulkTrackingEngine(Protocol):
    """An engine whose indexes take many `track` calls more cheaply together than one by one (a restore sets
    thousands of subjects in a row)."""

    def tracking_many(self) -> AbstractContextManager[None]:
        """Inside, `track` calls may be settled only on leaving; nothing reads the indexes meanwhile."""
        ...


@runtime_checkable
class ExplainingEngine(Protocol):
    """An engine that can say how it reached a subject's decision (OCM's debug view for placements)."""

    def explain(self, key: str, state: Any, ctx: EngineContext) -> dict[str, Any]:
        """Explain data of one subject against the current inputs; pure, publishes nothing."""
        ...


@dataclass(frozen=True, slots=True)
class WhatIf:
    """What one subject event would decide, not applied: `decision` and `current` in the same shape, so a reader
    can tell what would change (None: no decision, e.g. the subject would be gone or has none yet)."""

    decision: dict[str, Any] | None
    current: dict[str, Any] | None
    explanation: dict[str, Any] | None
    """The engine's explain document of the subject as the event would leave it."""


@runtime_checkable
class WhatIfEngine(Protocol):
    """An engine that can answer "what would this event decide?" against the current inputs (the live what-if)."""

    def what_if(self, key: str, state: Any, event: DecodedEvent, ctx: EngineContext) -> WhatIf:
        """Evaluate `event` on `state` without applying it: no state, index or published answer changes (caches
        derived from specs may be filled); the same budgets apply as to a decision."""
        ...


@runtime_checkable
class CostlyEngine(Protocol):
    """An engine whose subjects can be far costlier to decide than others (a Placement whose CEL spends its whole
    budget): the runtime decides such subjects after every other subject of the batch, so their cost delays no
    other subject's decision and, in the service, no other task's commit."""

    def costly(self, key: str, state: Any) -> bool:
        """Whether deciding the subject is expected to be costly, from its state and what the engine saw of its
        earlier decisions; deterministic for the same inputs."""
        ...


@runtime_checkable
class CountingEngine(Protocol):
    """An engine that counts events worth a metric (e.g. CEL evaluations stopped at their cost limit)."""

    def counters(self) -> Mapping[str, int]:
        """Monotonic totals by name since the engine was built; deterministic for the same inputs."""
        ...

    def take_notices(self) -> list[tuple[str, str]]:
        """(subject key, message) of each fact an operator should read in the log since the last call (e.g. a
        placement stopped by its CEL budget again), in a deterministic order; the service logs them."""
        ...
