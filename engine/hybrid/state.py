"""Per-rule state (hybrid spec A4 plus the engine's bookkeeping) and its changelog JSON form.

State is immutable: every transition returns a new `RuleState`, so a failed step never leaves half an update.
The JSON form is produced by pydantic from the dataclasses themselves, so it cannot drift from the fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from engine.errors import InvalidStateError
from engine.hybrid.identity import Ident, Ref
from topics.placementrule import PlacementRuleSpec, RecommendationEntry, reductions_of_earlier_shape

__all__ = ["Rating", "Reduction", "Removal", "RuleState", "dump_rule_state", "load_rule_state"]

_CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)
"""The changelog spells state fields like the wire (camelCase)."""


@dataclass(frozen=True, slots=True)
class Rating:
    """A candidate's exact rating in hundredths (H3)."""

    __pydantic_config__ = _CAMEL

    ref: Ref
    hundredths: int


@dataclass(frozen=True, slots=True)
class Reduction:
    """One elimination step in full (H6). `reason` is `predicate` or `rating`; ratings are kept for rating rounds
    only. The state keeps only the latest one whole."""

    __pydantic_config__ = _CAMEL

    round: int
    reason: str
    removed: tuple[Ref, ...]
    ratings: tuple[Rating, ...] = ()
    forced: bool = False

    @property
    def removal(self) -> Removal:
        """What the history keeps of this step."""
        return Removal(self.round, tuple(r.label for r in self.removed))


@dataclass(frozen=True, slots=True)
class Removal:
    """One elimination step as the history keeps it (H6): its round and the labels of the candidates it removed."""

    __pydantic_config__ = _CAMEL

    round: int
    removed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RuleState:
    """Everything the engine knows about one rule.

    `observed_generation` is None until the first reset, so a new rule always starts round 1. `deadline` is the
    armed advisor timer (None when nothing is awaited); `timed_out` marks a round whose deadline has passed, in
    which missing advisors abstain (I1). `published` is the decision set last sent, None before the first one.
    """

    __pydantic_config__ = _CAMEL

    namespace: str
    name: str
    generation: int
    spec: PlacementRuleSpec
    observed_generation: int | None = None
    round: int = 0
    candidates: tuple[Ref, ...] = ()
    eliminators: tuple[Ref, ...] = ()
    recommendations: Mapping[str, tuple[RecommendationEntry, ...]] = field(default_factory=dict)
    decisions: tuple[Ref, ...] = ()
    last_update_time: datetime | None = None
    deadline: datetime | None = None
    timed_out: bool = False
    published: tuple[Ref, ...] | None = None
    reductions: tuple[Removal, ...] = ()
    last_reduction: Reduction | None = None
    pool_kind: str = ""

    @property
    def key_set(self) -> frozenset[Ident]:
        """Identities of `candidates ∪ eliminators`, compared with a fresh list in D2."""
        return frozenset(r.ident for r in (*self.candidates, *self.eliminators))

    @property
    def ready(self) -> bool:
        """F1: every advisor named in the spec has answered this round."""
        return all(name in self.recommendations for name in self.spec.advisor_names)

    @property
    def asks_advisors(self) -> bool:
        """Whether the rule has advisors to ask; without, its rounds are published to nobody (H6)."""
        return bool(self.spec.advisors)

    def reduced(self, reductions: Sequence[Reduction], survivors: tuple[Ref, ...]) -> RuleState:
        """The state after `reductions` (oldest first) left `survivors`: eliminators and history extended, the
        last step kept whole (H6). One call per evaluation, so a run of many steps costs one copy."""
        if not reductions:
            return self
        return replace(
            self,
            candidates=survivors,
            eliminators=(*self.eliminators, *(ref for step in reductions for ref in step.removed)),
            reductions=(*self.reductions, *(step.removal for step in reductions)),
            last_reduction=reductions[-1],
        )


_ADAPTER: TypeAdapter[RuleState] = TypeAdapter(RuleState)


def dump_rule_state(state: RuleState) -> dict[str, Any]:
    """JSON-ready form (camelCase inside the spec and entries, as on the wire)."""
    raw: dict[str, Any] = _ADAPTER.dump_python(state, mode="json", by_alias=True, exclude_none=True)
    return raw


def load_rule_state(raw: Mapping[str, Any]) -> RuleState:
    """Rebuild a state written by `dump_rule_state`, or by a release that kept every reduction whole."""
    try:
        return _ADAPTER.validate_python(dict(reductions_of_earlier_shape(raw)))
    except ValidationError as exc:
        raise InvalidStateError(f"hybrid rule state cannot be read: {exc.error_count()} error(s): {exc}") from exc
