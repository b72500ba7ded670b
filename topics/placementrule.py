"""Hybrid PlacementRule in; advisor requests and recommendations; `placementrule.decided` out.

The rule's spec keeps what the user sent: unset fields stay None and the engine applies the defaults (hybrid spec
A1), so a rule pasted with the documentation's empty keys (`decisionWeight:`) validates as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import Field, model_validator

from topics.base import EventData, KubeObject
from topics.k8s import Int32, LabelSelector, ObjectMeta, ObjectReference

__all__ = [
    "DEFAULT_ADVISOR_WEIGHT",
    "DEFAULT_DECISION_WEIGHT",
    "DEFAULT_SCORE",
    "PREDICATE",
    "PRIORITY",
    "AdvisorRequest",
    "AdvisorSpec",
    "CandidateRating",
    "CandidatesProposed",
    "PlacementRule",
    "PlacementRuleDecided",
    "PlacementRuleObjectStatus",
    "PlacementRuleSpec",
    "PlacementRuleStatus",
    "RecommendationEntry",
    "RecommendationPosted",
    "Reduction",
    "ReductionSummary",
    "RuleRef",
    "reductions_of_earlier_shape",
    "targets_match",
]

PREDICATE = "predicate"
PRIORITY = "priority"
DEFAULT_ADVISOR_WEIGHT = 100
DEFAULT_DECISION_WEIGHT = 100
DEFAULT_SCORE = 100


class AdvisorSpec(KubeObject):
    """One `spec.advisors` entry; `rules` is opaque to the engine and passed on to the advisor."""

    name: str = Field(min_length=1)
    type: str | None = None
    weight: Int32 | None = None
    rules: Any = None

    @property
    def effective_type(self) -> str:
        """`priority` when unset (A1)."""
        return PRIORITY if self.type is None else self.type

    @property
    def effective_weight(self) -> int:
        """100 when unset (A1)."""
        return DEFAULT_ADVISOR_WEIGHT if self.weight is None else self.weight


class PlacementRuleSpec(KubeObject):
    """`spec` of a hybrid PlacementRule (upstream field names; unknown fields are kept)."""

    deployer_type: str | None = None
    targets: list[ObjectReference] | None = None
    target_labels: LabelSelector | None = None
    decision_weight: Int32 | None = None
    replicas: Int32 | None = None
    advisors: list[AdvisorSpec] | None = None

    @property
    def effective_decision_weight(self) -> int:
        """100 when unset (A1)."""
        return DEFAULT_DECISION_WEIGHT if self.decision_weight is None else self.decision_weight

    @property
    def advisor_list(self) -> list[AdvisorSpec]:
        """The advisors, empty when unset."""
        return list(self.advisors or ())

    @property
    def advisor_names(self) -> list[str]:
        """Distinct advisor names in spec order: who must answer each round (A2, F1)."""
        return list(dict.fromkeys(a.name for a in self.advisors or ()))


def targets_match(targets: Sequence[ObjectReference], namespace: str, name: str) -> bool:
    """Whether a `targets` list lets an object through: an empty list lets everything through, otherwise one
    entry must match, an empty field of an entry matching anything (B5). Advisors filter the same way."""
    if not targets:
        return True
    return any((not t.name or t.name == name) and (not t.namespace or t.namespace == namespace) for t in targets)


class PlacementRuleObjectStatus(KubeObject):
    """The part of a pasted rule's `status` the engine reads: decisions a previous controller made."""

    decisions: list[ObjectReference] | None = None


class PlacementRule(KubeObject):
    """`core.hybridapp.io/v1alpha1` PlacementRule."""

    api_version: str = "core.hybridapp.io/v1alpha1"
    kind: str = "PlacementRule"
    metadata: ObjectMeta
    spec: PlacementRuleSpec = Field(default_factory=PlacementRuleSpec)
    status: PlacementRuleObjectStatus | None = None


class RuleRef(EventData):
    """Names a PlacementRule."""

    namespace: str = ""
    name: str = Field(min_length=1)


class RecommendationEntry(EventData):
    """One candidate an advisor accepts or rates; `score` 0..100, unset means 100.

    `apiVersion` and `uid` are accepted so an advisor can echo a candidate reference; the engine ignores them (B8).
    """

    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str
    uid: str | None = None
    score: int | None = Field(default=None, ge=0, le=100)


class RecommendationPosted(EventData):
    """An advisor's answer for one round."""

    rule: RuleRef
    round: int
    advisor: str = Field(min_length=1)
    recommendations: list[RecommendationEntry] = Field(default_factory=list)


class CandidateRating(EventData):
    """One candidate's rating in a rating round; `hundredths` is the exact value compared (100 × rating, H3)."""

    candidate: ObjectReference
    rating: float
    hundredths: int


class Reduction(EventData):
    """The latest elimination step in full (H6): a predicate round (`reason: predicate`) or a rating round with
    the rating of every candidate it rated.

    `forced` marks eliminations made by forced finalisation at the deadline (I2); they belong to `round`.
    """

    round: int
    reason: str
    removed: list[ObjectReference] = Field(default_factory=list)
    ratings: list[CandidateRating] = Field(default_factory=list)
    forced: bool = False


class ReductionSummary(EventData):
    """One elimination step as the status history keeps it (H6): its round and the names it removed (`name`, or
    `namespace/name` for namespaced candidates; a rule's candidates share one kind), so the history grows with
    the candidates removed, never with rounds times candidates."""

    round: int
    removed: list[str] = Field(default_factory=list)


def reductions_of_earlier_shape(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """A status (or the engine's rule state) written by a release that kept every reduction whole (`reason`,
    references, ratings) in today's shape: the history as rounds and names, the last reduction whole in
    `lastReduction` (H6). Anything else is returned as it is; what is malformed is left for validation."""
    steps = raw.get("reductions")
    if "lastReduction" in raw or "last_reduction" in raw or not isinstance(steps, list) or not steps:
        return raw
    if not all(isinstance(step, Mapping) and "reason" in step for step in steps):
        return raw
    history = [{"round": step.get("round"), "removed": _names(step.get("removed"))} for step in steps]
    return {**raw, "reductions": history, "lastReduction": steps[-1]}


def _names(refs: Any) -> Any:
    """`namespace/name`, or `name` when cluster-scoped, of reference objects; anything else as it is."""
    if not isinstance(refs, list) or not all(isinstance(r, Mapping) for r in refs):
        return refs
    return [f"{r.get('namespace')}/{r.get('name')}" if r.get("namespace") else r.get("name") for r in refs]


class _ReductionHistory(EventData):
    """Reads statuses a release before the bounded history (H6) wrote, so a compacted decisions topic stays
    readable across an upgrade."""

    @model_validator(mode="before")
    @classmethod
    def _earlier_shape(cls, data: Any) -> Any:
        return reductions_of_earlier_shape(data) if isinstance(data, Mapping) else data


class PlacementRuleStatus(_ReductionHistory):
    """The rule's status (A4) as carried by a candidates publication."""

    observed_generation: int | None = None
    last_update_time: datetime | None = None
    round: int = 0
    candidates: list[ObjectReference] = Field(default_factory=list)
    eliminators: list[ObjectReference] = Field(default_factory=list)
    recommendations: dict[str, list[RecommendationEntry]] = Field(default_factory=dict)
    decisions: list[ObjectReference] = Field(default_factory=list)
    reductions: list[ReductionSummary] = Field(default_factory=list)
    """Every elimination step since the last reset, oldest first, as round and names (H6)."""
    last_reduction: Reduction | None = None
    """The latest of them in full, with its ratings (H6)."""


class AdvisorRequest(EventData):
    """One `spec.advisors` entry as an advisor sees it (with the engine's defaults applied)."""

    name: str
    type: str
    weight: int
    rules: Any = None


class CandidatesProposed(EventData):
    """A new round: the candidates the named advisors are asked about.

    `advisors` lists each name that must answer once; `advisorSpecs` keeps every entry (a name may repeat, A2);
    `advisorRules` maps a name to the rules of its first entry that has rules.
    """

    rule: RuleRef
    round: int
    advisors: list[str]
    candidates: list[ObjectReference]
    advisor_rules: dict[str, Any] = Field(default_factory=dict)
    advisor_specs: list[AdvisorRequest] = Field(default_factory=list)
    status: PlacementRuleStatus | None = None


class PlacementRuleDecided(_ReductionHistory):
    """The rule's decisions and its status snapshot; `deleted` marks the last event of a deleted rule."""

    namespace: str
    name: str
    generation: int = 0
    decisions: list[ObjectReference] = Field(default_factory=list)
    candidates: list[ObjectReference] = Field(default_factory=list)
    eliminators: list[ObjectReference] = Field(default_factory=list)
    round: int = 0
    deleted: bool = False
    observed_generation: int | None = None
    last_update_time: datetime | None = None
    recommendations: dict[str, list[RecommendationEntry]] = Field(default_factory=dict)
    reductions: list[ReductionSummary] = Field(default_factory=list)
    last_reduction: Reduction | None = None
