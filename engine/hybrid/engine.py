"""The hybrid placement engine: PlacementRules reduced in rounds with external advisors (hybrid spec).

Rule and recommendation events are handled at once, in arrival order, so a post for a round that an update in the
same batch has just opened is not lost. Inventory changes reach the rules through `affected_by` and `decide`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from engine.core import Emit, EngineContext, Step, WhatIf
from engine.hybrid.candidates import DEPLOYER, MANAGED_CLUSTER, CandidateError, Pool, generate
from engine.hybrid.identity import Ref
from engine.hybrid.output import candidates_proposed, decided, deleted, status_of
from engine.hybrid.rounds import Progress, expire, post, refresh, settle
from engine.hybrid.state import RuleState, dump_rule_state, load_rule_state
from engine.inventory import InventoryChange
from topics.codec import DecodedEvent, dump_model
from topics.names import TopicRole
from topics.placementrule import PlacementRule, RecommendationPosted

__all__ = [
    "APPLIED",
    "DECIDED",
    "DELETED",
    "POSTED",
    "PROPOSED",
    "HybridPlacementEngine",
    "explain_rule",
    "subject_key",
]

_LOG = logging.getLogger(__name__)

APPLIED = "placementrule.applied"
DELETED = "placementrule.deleted"
POSTED = "recommendation.posted"
PROPOSED = "candidates.proposed"
DECIDED = "placementrule.decided"


def subject_key(namespace: str, name: str) -> str:
    """`PlacementRule/<namespace>/<name>`."""
    return f"PlacementRule/{namespace}/{name}"


def explain_rule(key: str, state: RuleState) -> dict[str, Any]:
    """The explain document of one rule: where its reduction stands (round, who was asked and who answered,
    deadline) next to the status snapshot the decision events carry (candidates, eliminators, answers, the
    reductions as rounds and names with the latest in full, the decisions so far)."""
    expected = state.spec.advisor_names
    answered = [name for name in expected if name in state.recommendations]
    if state.deadline is not None:
        phase = "waiting for advisors"
    elif state.observed_generation is None:
        phase = "no candidates yet"
    else:
        phase = "decided"
    return {
        "placementRule": key,
        "generation": state.generation,
        "phase": phase,
        "replicas": state.spec.replicas,
        "decisionWeight": state.spec.effective_decision_weight,
        "advisors": {
            "expected": expected,
            "answered": answered,
            "missing": [name for name in expected if name not in state.recommendations],
            "timedOut": state.timed_out,
        },
        "deadline": None if state.deadline is None else state.deadline.isoformat().replace("+00:00", "Z"),
        **dump_model(status_of(state)),
    }


def _tokens(state: RuleState) -> tuple[str, ...]:
    """Index entries of a rule: which inventory changes can alter its candidates."""
    deployer_type = state.spec.deployer_type
    if deployer_type is None:
        return (f"kind:{MANAGED_CLUSTER}",)
    tokens = [f"type:{deployer_type}"]
    if state.pool_kind and state.pool_kind != DEPLOYER:
        tokens.append(f"kind:{state.pool_kind}")
    return tuple(tokens)


def _change_tokens(change: InventoryChange) -> set[str]:
    kind = change.key.kind
    if kind != DEPLOYER:
        return {f"kind:{kind}"}
    tokens: set[str] = set()
    for obj in (change.before, change.after):
        spec = getattr(obj, "spec", None)
        deployer_type = getattr(spec, "type", None)
        if isinstance(deployer_type, str):
            tokens.add(f"type:{deployer_type}")
    return tokens


class HybridPlacementEngine:
    """SubjectEngine for `PlacementRule/<namespace>/<name>` subjects."""

    KIND: ClassVar[str] = "PlacementRule"
    EVENTS: ClassVar[frozenset[str]] = frozenset({APPLIED, DELETED, POSTED})
    KEY_SHAPE: ClassVar[str] = "PlacementRule/<namespace>/<name>"

    @staticmethod
    def subject_of(event: DecodedEvent) -> str | None:
        """The rule an advisor's post answers, or the rule (or deletion) the event carries."""
        data = event.data
        if isinstance(data, RecommendationPosted):
            return f"PlacementRule/{data.rule.namespace}/{data.rule.name}"
        meta = data.metadata  # type: ignore[attr-defined]  # the rule events carry Kubernetes metadata
        return f"PlacementRule/{meta.namespace}/{meta.name}"

    def __init__(self) -> None:
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._by_token: dict[str, set[str]] = {}

    # --- events -----------------------------------------------------------------------------------
    def on_event(self, key: str, state: RuleState | None, event: DecodedEvent, ctx: EngineContext) -> Step[RuleState]:
        """Apply a rule update or deletion, or an advisor's answer."""
        name = event.kind.name
        data = event.data
        if name == APPLIED and isinstance(data, PlacementRule):
            return self._apply(state, data, ctx)
        if name == DELETED:
            return self.on_deleted(key, state, ctx)
        if name == POSTED and isinstance(data, RecommendationPosted):
            if state is None:
                _LOG.debug("dropping %s's answer: %s is unknown", data.advisor, key)
                return Step(None)
            updated = post(state, data)
            if updated is None:
                return Step(state)
            return self._finish(settle(updated, ctx.now, _timeout(ctx)))
        _LOG.warning("%s: unexpected event %s", key, name)
        return Step(state)

    def on_deleted(self, key: str, state: RuleState | None, ctx: EngineContext) -> Step[RuleState]:
        """D6: drop the state and publish `deleted: true`, then a tombstone for the compacted decisions topic."""
        if state is None:
            return Step(None)
        final = deleted(state.namespace, state.name, state.generation)
        return Step(None, (Emit(DECIDED, final), Emit(None, None)))

    def decide(self, key: str, state: RuleState, ctx: EngineContext) -> Step[RuleState]:
        """D1–D4 after an inventory change (or a restore): fresh candidates, reset if needed, evaluate."""
        try:
            pool = generate(state.spec, ctx.inventory)
        except CandidateError as exc:
            _LOG.error("%s: %s", key, exc)
            return self._finish(Progress(state))
        return self._finish(refresh(state, pool, ctx.now, _timeout(ctx)))

    def on_timer(self, key: str, state: RuleState, ctx: EngineContext) -> Step[RuleState]:
        """F2/I: the round's deadline passed."""
        return self._finish(expire(state, ctx.now, _timeout(ctx)))

    def next_due(self, state: RuleState) -> datetime | None:
        """The current round's deadline while advisors are awaited."""
        return state.deadline

    # --- indexes ----------------------------------------------------------------------------------
    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        """Rules whose pool an inventory change touches (C3): clusters, Deployers of their type, target kinds."""
        tokens: set[str] = set()
        for change in changes:
            tokens |= _change_tokens(change)
        keys: set[str] = set()
        for token in tokens:
            keys |= self._by_token.get(token, set())
        return sorted(keys)

    def track(self, key: str, state: RuleState | None) -> None:
        """Keep the token index in step with the rule's spec and pool kind."""
        new = _tokens(state) if state is not None else ()
        old = self._tokens.get(key, ())
        if new == old:
            return
        for token in old:
            bucket = self._by_token.get(token)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._by_token[token]
        for token in new:
            self._by_token.setdefault(token, set()).add(key)
        if new:
            self._tokens[key] = new
        else:
            self._tokens.pop(key, None)

    # --- explain ----------------------------------------------------------------------------------
    def explain(self, key: str, state: RuleState, ctx: EngineContext) -> dict[str, Any]:
        """Explain data of one rule, from its state alone (pure: no round is opened or closed)."""
        return explain_rule(key, state)

    def what_if(self, key: str, state: RuleState | None, event: DecodedEvent, ctx: EngineContext) -> WhatIf:
        """The rule's decisions and round after the event, next to its current ones; the states are immutable,
        so applying the event to a copy is applying it to nothing."""
        step = self.on_event(key, state, event, ctx)
        explained = None if step.state is None else explain_rule(key, step.state)
        current = None if state is None else explain_rule(key, state)
        return WhatIf(_decision_of(explained), _decision_of(current), explained)

    # --- state ------------------------------------------------------------------------------------
    def dump_state(self, state: RuleState) -> dict[str, Any]:
        """JSON for the changelog."""
        return dump_rule_state(state)

    def load_state(self, raw: Mapping[str, Any]) -> RuleState:
        """State from `dump_state` output."""
        return load_rule_state(raw)

    # --- internals --------------------------------------------------------------------------------
    def _apply(self, state: RuleState | None, rule: PlacementRule, ctx: EngineContext) -> Step[RuleState]:
        meta = rule.metadata
        try:
            pool: Pool | None = generate(rule.spec, ctx.inventory)
        except CandidateError as exc:
            _LOG.error("PlacementRule %s/%s: %s; the rule keeps its state", meta.namespace, meta.name, exc)
            if state is not None:
                return Step(state)
            pool = None
        if state is None:
            pasted = (rule.status.decisions or []) if rule.status else []
            refs = (Ref.from_reference(d, pool.kind if pool else "") for d in pasted)
            known = {c: c for c in pool.candidates} if pool else {}
            seeded = tuple(known.get(r, r) for r in refs)  # J1: decisions are copies of candidates (apiVersion)
            state = RuleState(meta.namespace, meta.name, meta.generation, rule.spec, decisions=seeded)
        else:
            generation = meta.generation
            if generation == 0:  # the producer does not count generations: every spec change is a new one
                generation = state.generation + int(rule.spec != state.spec)
            state = replace(state, generation=generation, spec=rule.spec)
        if pool is None:
            return self._finish(Progress(state))
        return self._finish(refresh(state, pool, ctx.now, _timeout(ctx)))

    def _finish(self, progress: Progress) -> Step[RuleState]:
        """Publish every opened round, then the decisions when their set changed (J2) or was never sent."""
        emits = [Emit(PROPOSED, candidates_proposed(s), topic=TopicRole.ADVISOR_REQUESTS) for s in progress.opened]
        state = progress.state
        current = {r.ident for r in state.decisions}
        if state.published is None or {r.ident for r in state.published} != current:
            state = replace(state, published=state.decisions)
            emits.append(Emit(DECIDED, decided(state)))
        return Step(state, tuple(emits))


def _decision_of(explained: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a what-if compares of a rule: its decisions, where its reduction stands and which advisors it asks."""
    if explained is None:
        return None
    return {
        "decisions": explained["decisions"],
        "phase": explained["phase"],
        "round": explained["round"],
        "advisors": explained["advisors"]["expected"],
    }


def _timeout(ctx: EngineContext) -> timedelta:
    return timedelta(seconds=ctx.settings.advisor_timeout_seconds)
