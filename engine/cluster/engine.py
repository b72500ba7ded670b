"""ClusterPlacementEngine: OCM Placement v1beta1 as a SubjectEngine (spec K, L).

Decides a placement at the end of a batch, publishes only when its answer changed, follows up once on its
own changed decision (L5) and keeps a timer for toleration and score expiry (L6) or resync (L8).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, ClassVar

from engine.cluster.explain.placement import explain_evaluation
from engine.cluster.fleet.views import EvaluationError, InventoryView
from engine.cluster.pipeline.compiled import CompiledPlacement, compiled_spec
from engine.cluster.pipeline.evaluate import Evaluation, evaluate
from engine.cluster.pipeline.framework import BalanceCounts, EvalContext, ValueRange
from engine.cluster.pipeline.plugins.predicate import stopped_count
from engine.cluster.pipeline.status import Code
from engine.cluster.tracking.affected import ClusterDelta, affected_placements, answer_may_change, leaving_moves_others
from engine.cluster.tracking.events import decided_event, deleted_event
from engine.cluster.tracking.indexes import PlacementIndex, TrackedPlacement
from engine.cluster.tracking.next_steps import follow_up_may_differ, next_resync, published_answer, with_due
from engine.cluster.tracking.state import (
    PlacementState,
    dump_placement_state,
    load_placement_part,
    load_placement_state,
    peer_decided,
    placement_state_changes,
)
from engine.core import Emit, EngineContext, StatePart, Step, WhatIf
from engine.inventory import Inventory, InventoryChange
from topics.codec import DecodedEvent
from topics.interning import ByIdentity, Interning
from topics.placement import Placement

__all__ = ["DISABLE_ANNOTATION", "ClusterPlacementEngine"]

DISABLE_ANNOTATION = "cluster.open-cluster-management.io/experimental-scheduling-disable"
_log = logging.getLogger(__name__)
_TICK = timedelta(microseconds=1)
"""The shortest resync period: a shorter one would round to zero and never move the timer."""


class ClusterPlacementEngine:
    """The cluster placement engine; indexes are rebuilt from `track` calls."""

    KIND: ClassVar[str] = "Placement"
    EVENTS: ClassVar[frozenset[str]] = frozenset({"placement.applied", "placement.deleted"})
    KEY_SHAPE: ClassVar[str] = "Placement/<namespace>/<name>"

    @staticmethod
    def subject_of(event: DecodedEvent) -> str | None:
        """`Placement/<namespace>/<name>` of the Placement (or deletion) the event carries."""
        meta = event.data.metadata  # type: ignore[attr-defined]  # both events carry Kubernetes metadata
        return f"Placement/{meta.namespace}/{meta.name}"

    def __init__(self) -> None:
        self._interning = Interning()
        """The pools of the runtime running the engine (`use_interning`); until then, the engine's own."""
        self._index = PlacementIndex()
        self._compiled: dict[str, tuple[Placement, CompiledPlacement]] = {}
        self._view: InventoryView | None = None
        self._ranges: dict[str, dict[str, ValueRange]] = {}
        """Per placement, the ValueRange of each prioritizer in its last decision (derived, not persisted)."""
        self.decide_calls = 0
        """How many times a placement was decided (batch end, timer); for metrics and benchmarks."""
        self.evaluations = 0
        """Pipeline runs, including L5 follow-ups and explain."""
        self.published = 0
        """`placement.decided` events emitted for evaluations (deletions not counted)."""
        self.cel_evaluations_stopped = 0
        """CEL evaluations of a cluster stopped at the cost limit (outcomes reused from caches not counted)."""
        self.cel_budget_stops = 0
        """Placement evaluations stopped by their CEL budget (C17)."""
        self._budget_streaks: dict[str, int] = {}
        """Placements whose last evaluation was stopped by its budget: how many in a row (derived, not persisted)."""
        self._evaluated: dict[str, Placement] = {}
        """Each placement's spec as of its last evaluation (derived, not persisted): a spec with CEL not evaluated
        yet may cost its whole budget (`costly`)."""
        self._repeated: dict[str, int] = {}
        """Placements stopped by their budget again since `take_notices` last ran, with their streak."""

    # --- helpers ---------------------------------------------------------------------------------
    def view(self, inventory: Inventory) -> InventoryView:
        """The inventory view of the current version (one per batch in practice)."""
        view = self._view
        if view is None or view.inventory is not inventory or not view.fresh():
            view = self._view = InventoryView(inventory, previous=view)
        return view

    def compiled(self, key: str, placement: Placement) -> CompiledPlacement:
        """Selectors and CEL of a placement, compiled once per spec object."""
        cached = self._compiled.get(key)
        if cached is not None and cached[0] is placement:
            return cached[1]
        compiled = compiled_spec(placement, self._interning)
        self._compiled[key] = (placement, compiled)
        return compiled

    def others(self, key: str) -> BalanceCounts:
        """Balance input of one placement: every other tracked placement's decision."""
        return self._index.others(key)

    def _evaluate(self, key: str, state: PlacementState, ctx: EngineContext, *, explain: bool = False) -> Evaluation:
        self.evaluations += 1
        placement, published = state.placement, state.published
        view = self.view(ctx.inventory)
        fleet = view.fleet()
        current = state.current()
        # the published decision's ids are kept from the evaluation that made it: a decision holds hundreds of
        # clusters, and Balance (the tracked decision) and Steady (the current one) read them every time
        current_ids = None if published is None else published.decided_ids(fleet)
        tracked = self._index.tracked.get(key)  # a follow-up's own decision is still the previous one (L5)
        own_ids = current_ids if tracked is not None and tracked.decided is current else None
        eval_ctx = EvalContext(
            placement=placement,
            view=view,
            now=ctx.now,
            current=current,
            others=self._index.others(key, fleet, own_ids),
            compiled=self.compiled(key, placement),
            explain=explain or key in ctx.settings.explain,
            current_ids=current_ids,
            cel_budget=ctx.settings.cel_placement_budget,
        )
        stopped = stopped_count(view)
        before, budget_before = stopped.count, stopped.budget
        try:
            return evaluate(eval_ctx)
        finally:
            self.cel_evaluations_stopped += stopped.count - before
            if not explain:
                self._evaluated[key] = placement
                self._follow_budget(key, stopped.budget > budget_before)

    def _follow_budget(self, key: str, stopped: bool) -> None:
        """Count an evaluation stopped by its budget (C17), and note a placement stopped again (N3)."""
        if not stopped:
            self._budget_streaks.pop(key, None)
            return
        self.cel_budget_stops += 1
        streak = self._budget_streaks[key] = self._budget_streaks.get(key, 0) + 1
        if streak > 1:
            self._repeated[key] = streak

    # --- SubjectEngine ---------------------------------------------------------------------------
    def on_event(
        self, key: str, state: PlacementState | None, event: DecodedEvent, ctx: EngineContext
    ) -> Step[PlacementState]:
        """`placement.applied` stores the spec and asks for a decision; `placement.deleted` ends the subject."""
        if event.kind.name == "placement.deleted":
            return self.on_deleted(key, state, ctx)
        if event.kind.name != "placement.applied" or not isinstance(event.data, Placement):
            return Step(state)
        published = state.published if state is not None else None
        return Step(PlacementState(event.data, published, state.due if state is not None else None), redecide=True)

    def on_deleted(self, key: str, state: PlacementState | None, ctx: EngineContext) -> Step[PlacementState]:
        """Publish `deleted: true`, then a tombstone (spec K5, decided item 3)."""
        if state is None:
            return Step(None)
        meta = state.placement.metadata
        final = deleted_event(meta.namespace, meta.name, meta.generation, ctx.now)
        return Step(None, (Emit("placement.decided", final), Emit(None, None)))

    def decide(self, key: str, state: PlacementState, ctx: EngineContext) -> Step[PlacementState]:
        """Evaluate, publish when the answer changed, and follow up once on a changed decision (L5)."""
        self.decide_calls += 1
        placement = state.placement
        self._ranges.pop(key, None)
        if placement.metadata.deletion_timestamp is not None:
            return Step(with_due(state, None))
        if placement.metadata.annotations.get(DISABLE_ANNOTATION) == "true":
            return Step(with_due(state, None))
        try:
            emits, state, last = self._decide_once(key, state, ctx, follow_up=True)
        except EvaluationError as exc:
            _log.error("placement %s not evaluated: %s", key, exc)
            return Step(with_due(state, next_resync(ctx)))
        ranges = {p.name: p.range for p in last.prioritizers if p.range is not None}
        if ranges:
            self._ranges[key] = ranges
        candidates = [instant for instant in (last.due, next_resync(ctx)) if instant is not None]
        due = min(candidates) if candidates else None
        return Step(with_due(state, due), tuple(emits))

    def _decide_once(
        self, key: str, state: PlacementState, ctx: EngineContext, *, follow_up: bool
    ) -> tuple[list[Emit], PlacementState, Evaluation]:
        evaluation = self._evaluate(key, state, ctx)
        if evaluation.status.code in (Code.MISCONFIGURED, Code.WARNING):
            _log.warning("placement %s: %s", key, evaluation.status.condition_message())
        previous = state.published
        warning = None if evaluation.warning is None else (evaluation.warning.plugin, evaluation.warning.message)
        conditions = evaluation.conditions
        if previous is not None and previous.same_answer(
            evaluation.pages, len(evaluation.selected), warning, conditions
        ):
            return [], state, evaluation
        published = published_answer(state, evaluation, warning, ctx.now, self._interning)
        if evaluation.fleet is not None and len(evaluation.selected_ids) == len(published.decided):
            published.remember_ids(evaluation.fleet, evaluation.selected_ids)
        meta = state.placement.metadata
        explain = key in ctx.settings.explain
        emits = [
            Emit(
                "placement.decided",
                decided_event(meta.namespace, meta.name, published, evaluation, self._interning, explain=explain),
            )
        ]
        self.published += 1
        new_state = PlacementState(state.placement, published, state.due)
        decided = published.decided
        current = state.current()
        if (
            follow_up
            and decided != current
            and follow_up_may_differ(evaluation, current, decided, self.view(ctx.inventory).no_select_if_new)
        ):
            more, new_state, evaluation = self._decide_once(key, new_state, ctx, follow_up=False)
            emits.extend(more)
        return emits, new_state, evaluation

    def on_timer(self, key: str, state: PlacementState, ctx: EngineContext) -> Step[PlacementState]:
        """A toleration or score expiry, or the resync, is due: re-evaluate."""
        return self.decide(key, state, ctx)

    def next_due(self, state: PlacementState) -> datetime | None:
        """The instant stored by the last decision."""
        return state.due

    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        """Only the placements the changes can affect, in (namespace, name) order (L2–L4, L10)."""
        explained = ctx.settings.explain
        verdicts: ByIdentity[bool | None] = ByIdentity(1 << 16)
        """By (delta, spec, holds): thousands of placements repeat a few hundred specs, which they share."""

        def may_change(key: str, delta: ClusterDelta) -> bool:
            cached = self._compiled.get(key)
            tracked = self._index.tracked.get(key)
            # explained placements report every cluster's filter, so any change shows in them
            if key in explained or cached is None or tracked is None:
                return True
            placement, compiled = cached
            verdict = verdicts.get(
                (delta, placement.spec, delta.name in tracked.decided),
                lambda delta, spec, holds: answer_may_change(spec, compiled, delta, holds=holds, now=ctx.now),
            )
            if verdict is not None:
                return verdict
            return leaving_moves_others(placement, self.view(ctx.inventory), ctx.now, delta.name, self._ranges.get(key))

        return affected_placements(self._index, changes, ctx.inventory, may_change)

    def track(self, key: str, state: PlacementState | None) -> None:
        """Keep the namespace, score and decision indexes and the Balance counts in step."""
        if state is None:
            self._index.remove(key)
            self._compiled.pop(key, None)
            self._ranges.pop(key, None)
            self._budget_streaks.pop(key, None)
            self._evaluated.pop(key, None)
            return
        placement, published = state.placement, state.published
        compiled = self.compiled(key, placement)
        self._index.put(
            key,
            TrackedPlacement(
                namespace=placement.metadata.namespace,
                cluster_sets=compiled.cluster_sets,
                score_names=compiled.score_resources,
                decided=state.current(),
                decided_ids=None if published is None else published.known_ids(),
            ),
        )

    def tracking_many(self) -> AbstractContextManager[None]:
        """The Balance counts of placements decided for the first time are added on leaving (a restore)."""
        return self._index.counts.deferred()

    def dump_state(self, state: PlacementState) -> dict[str, Any]:
        """The whole state as JSON (the changelog keeps it as two parts, see `state_changes`)."""
        return dump_placement_state(state, self._interning)

    def load_state(self, raw: Mapping[str, Any]) -> PlacementState:
        """Inverse of dump_state."""
        return load_placement_state(raw, self._interning)

    def state_changes(self, old: PlacementState | None, new: PlacementState | None) -> Iterable[StatePart]:
        """The Placement as the subject's own entry and the decision as the `decision` part: a re-decision writes
        only the decision, not the Placement again."""
        return placement_state_changes(old, new, self._interning)

    def load_part(
        self, state: PlacementState | None, part: str, raw: Mapping[str, Any] | None
    ) -> PlacementState | None:
        """Apply one changelog entry of `state_changes` (or a whole-state entry from before the parts)."""
        return load_placement_part(state, part, raw, self._interning)

    # --- PooledEngine ----------------------------------------------------------------------------
    def use_interning(self, interning: Interning) -> None:
        """Share specs, compiled specs, decisions and conditions through the runtime's pools."""
        self._interning = interning

    # --- PeerAwareEngine -------------------------------------------------------------------------
    def observe_peer(self, key: str, part: str, raw: Mapping[str, Any] | None) -> None:
        """Another instance's placement: its decided clusters count in every Balance score here (F2)."""
        decided = peer_decided(part, raw, self._interning)
        if decided is not None:
            self._index.observe_peer(key, decided)

    def release(self, key: str) -> None:
        """Another instance takes the placement over: its decision stays counted until the new owner writes."""
        self._index.release(key)

    def decided_counts(self) -> dict[str, int]:
        """How many placements decided each cluster, those of other instances included: Balance's input."""
        return {name: count for name, count in self._index.counts.counts.items() if count > 0}

    def adopt(self, owned: Callable[[str], bool]) -> None:
        """This instance restores these placements next: what was seen of them as peers' no longer counts."""
        self._index.drop_peers(owned)

    # --- explain ---------------------------------------------------------------------------------
    def counters(self) -> Mapping[str, int]:
        """CEL evaluations stopped at their cost limit, placement evaluations stopped by their budget."""
        return {"cel_evaluations_stopped": self.cel_evaluations_stopped, "cel_budget_stops": self.cel_budget_stops}

    def costly(self, key: str, state: PlacementState) -> bool:
        """Decided after the other subjects of a batch (platform P15): a placement whose last evaluation its CEL
        budget stopped (C17), which will most likely spend it again, and one whose CEL has not been evaluated in
        this spec yet, which may."""
        if key in self._budget_streaks:
            return True
        placement = state.placement
        return self._evaluated.get(key) is not placement and any(
            p.required_cluster_selector.cel_selector is not None
            and p.required_cluster_selector.cel_selector.cel_expressions
            for p in placement.spec.predicates
        )

    def take_notices(self) -> list[tuple[str, str]]:
        """Each placement stopped by its CEL budget again since the last call (N3), by key."""
        repeated, self._repeated = self._repeated, {}
        return [
            (key, f"placement {key}: CEL evaluation stopped by its placement budget again ({streak} in a row)")
            for key, streak in sorted(repeated.items())
        ]

    def what_if(self, key: str, state: PlacementState | None, event: DecodedEvent, ctx: EngineContext) -> WhatIf:
        """The clusters the event's Placement would be given now (an explain evaluation: no decision is recorded,
        and the CEL budget applies), next to the clusters of its published decision."""
        step = self.on_event(key, state, event, ctx)
        current = None if state is None or state.published is None else {"clusters": sorted(state.current())}
        if step.state is None:
            return WhatIf(None, current, None)
        explained = self.explain(key, step.state, ctx)
        return WhatIf({"clusters": sorted(explained["selected"])}, current, explained)

    def explain(self, key: str, state: PlacementState, ctx: EngineContext) -> dict[str, Any]:
        """Explain data of one placement against the current inputs, with the tracked Balance counts."""
        evaluation = self._evaluate(key, state, ctx, explain=True)
        budget = ctx.settings.cel_placement_budget
        return explain_evaluation(key, state, evaluation, ctx.now, self.view(ctx.inventory), cel_budget=budget)
