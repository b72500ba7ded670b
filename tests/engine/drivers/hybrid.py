"""A pure, single-rule driver for the hybrid engine: what the tables and the conformance runner use instead of Kafka.

Events go through the real codec (encode, then decode) so payloads are validated exactly as in the service, and
timers fire at their due instant as the runtime fires them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from engine.core import Emit, EngineContext, EngineSettings, Step
from engine.hybrid.engine import APPLIED, DECIDED, DELETED, POSTED, PROPOSED, HybridPlacementEngine, subject_key
from engine.hybrid.state import Reduction, Removal, RuleState
from engine.inventory import Inventory, InventoryChange, ObjectKey
from topics.base import KubeObject
from topics.codec import decode_event, encode_event
from topics.events import EVENT_KINDS, ObjectDeleted
from topics.k8s import ObjectMeta
from topics.placementrule import (
    CandidatesProposed,
    PlacementRule,
    PlacementRuleDecided,
    RecommendationEntry,
    RecommendationPosted,
    RuleRef,
)

__all__ = ["T0", "RuleDriver"]

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class RuleDriver:
    """Feeds one rule's events to a HybridPlacementEngine and records everything it emits."""

    def __init__(
        self,
        objects: Iterable[KubeObject] = (),
        *,
        namespace: str = "default",
        name: str = "rule",
        now: datetime = T0,
        timeout_seconds: float = 30.0,
    ) -> None:
        self.engine = HybridPlacementEngine()
        self.inventory = Inventory()
        self.settings = EngineSettings(advisor_timeout_seconds=timeout_seconds)
        self.namespace = namespace
        self.name = name
        self.key = subject_key(namespace, name)
        self.now = now
        self.state: RuleState | None = None
        self.emits: list[Emit] = []
        self.reductions: list[Removal] = []
        """Every reduction seen as round and labels, across resets (the status keeps those since the last reset)."""
        self.full_reductions: list[Reduction] = []
        """Every reduction the status held in full (H6: the latest of each step's), in the order seen. A step
        that reduces several times (no advisors, forced finalisation) leaves only its last one here."""
        self._kinds: set[str] = set()
        """Kinds ever applied, so `replace_inventory` knows where to look for objects to drop."""
        self.change_inventory(objects)

    # --- reads ------------------------------------------------------------------------------------
    @property
    def proposals(self) -> list[CandidatesProposed]:
        """Every candidates publication so far."""
        return [e.data for e in self.emits if e.kind == PROPOSED and isinstance(e.data, CandidatesProposed)]

    @property
    def decided_events(self) -> list[PlacementRuleDecided]:
        """Every decision event so far."""
        return [e.data for e in self.emits if e.kind == DECIDED and isinstance(e.data, PlacementRuleDecided)]

    @property
    def round(self) -> int:
        """The rule's current round (0 before the first)."""
        return 0 if self.state is None else self.state.round

    def context(self) -> EngineContext:
        """The engine context at the driver's clock."""
        return EngineContext(now=self.now, inventory=self.inventory, settings=self.settings)

    # --- inputs -----------------------------------------------------------------------------------
    def apply_rule(
        self,
        spec: Mapping[str, Any],
        *,
        generation: int = 1,
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> Step[RuleState]:
        """Create or update the rule; `decisions` seeds a new rule's decisions through its pasted status."""
        raw: dict[str, Any] = {
            "metadata": {"name": self.name, "namespace": self.namespace, "generation": generation},
            "spec": dict(spec),
        }
        if decisions:
            raw["status"] = {"decisions": [dict(d) for d in decisions]}
        return self._event(APPLIED, PlacementRule.model_validate(raw))

    def delete_rule(self) -> Step[RuleState]:
        """Delete the rule."""
        meta = ObjectMeta(name=self.name, namespace=self.namespace)
        return self._event(DELETED, ObjectDeleted(metadata=meta))

    def post(
        self, advisor: str, entries: Sequence[Mapping[str, Any]], round_number: int | None = None
    ) -> Step[RuleState]:
        """An advisor's answer, for the current round unless `round_number` is given."""
        posted = RecommendationPosted(
            rule=RuleRef(namespace=self.namespace, name=self.name),
            round=self.round if round_number is None else round_number,
            advisor=advisor,
            recommendations=[RecommendationEntry.model_validate(e) for e in entries],
        )
        return self._event(POSTED, posted)

    def change_inventory(self, apply: Iterable[KubeObject] = (), delete: Iterable[ObjectKey] = ()) -> None:
        """One inventory event: apply and delete objects, then decide the rule if the engine says it is affected."""
        changes: list[InventoryChange] = []
        for obj in apply:
            self._kinds.add(ObjectKey.of(obj).kind)
            changes += self.inventory.apply(obj, self.now)
        for key in delete:
            changes += self.inventory.delete(key, self.now)
        ctx = self.context()
        if self.state is not None and changes and self.key in set(self.engine.affected_by(changes, ctx)):
            self._take(self.engine.decide(self.key, self.state, ctx))

    def replace_inventory(self, objects: Iterable[KubeObject]) -> None:
        """Make `objects` the whole inventory, as one inventory event."""
        wanted = list(objects)
        keep = {ObjectKey.of(obj) for obj in wanted}
        gone = [
            ObjectKey(kind, ns, name)
            for kind in sorted(self._kinds)
            for (ns, name) in self.inventory.objects(kind)
            if ObjectKey(kind, ns, name) not in keep
        ]
        self.change_inventory(wanted, gone)

    def advance(self, seconds: float) -> None:
        """Move the clock; a timer that falls due fires at its own instant, as in the runtime."""
        target = self.now + timedelta(seconds=seconds)
        while self.state is not None:
            due = self.engine.next_due(self.state)
            if due is None or due > target:
                break
            self.now = due
            self._take(self.engine.on_timer(self.key, self.state, self.context()))
        self.now = target

    # --- internals --------------------------------------------------------------------------------
    def _event(self, kind_name: str, data: BaseModel) -> Step[RuleState]:
        raw = encode_event(kind_name=kind_name, data=data, subject=self.key, event_id="driver", time=self.now)
        event = decode_event(raw, EVENT_KINDS[kind_name].topic)
        step = self.engine.on_event(self.key, self.state, event, self.context())
        self._take(step)
        return step

    def _take(self, step: Step[RuleState]) -> None:
        previous = self.state
        before = previous.reductions if previous is not None else ()
        self.emits.extend(step.emits)
        self.state = step.state
        self.engine.track(self.key, step.state)
        after = step.state.reductions if step.state is not None else ()
        if after[: len(before)] == before:
            self.reductions.extend(after[len(before) :])
        else:
            self.reductions.extend(after)
        latest = step.state.last_reduction if step.state is not None else None
        if latest is not None and (previous is None or latest is not previous.last_reduction):
            self.full_reductions.append(latest)
