"""Hybrid PlacementRule in; advisor requests and recommendations; `placementrule.decided` out."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from topics.base import EventData, KubeObject
from topics.k8s import ObjectMeta, ObjectReference

__all__ = [
    "CandidatesProposed",
    "PlacementRule",
    "PlacementRuleDecided",
    "RecommendationEntry",
    "RecommendationPosted",
    "RuleRef",
]


class PlacementRule(KubeObject):
    """`core.hybridapp.io/v1alpha1` PlacementRule."""

    api_version: str = "core.hybridapp.io/v1alpha1"
    kind: str = "PlacementRule"
    metadata: ObjectMeta
    spec: dict[str, Any] = Field(default_factory=dict)


class RuleRef(EventData):
    """Names a PlacementRule."""

    namespace: str = ""
    name: str = Field(min_length=1)


class RecommendationEntry(EventData):
    """One candidate an advisor accepts or rates; `score` 0..100, unset means 100."""

    kind: str | None = None
    namespace: str | None = None
    name: str
    score: int | None = Field(default=None, ge=0, le=100)


class RecommendationPosted(EventData):
    """An advisor's answer for one round."""

    rule: RuleRef
    round: int
    advisor: str = Field(min_length=1)
    recommendations: list[RecommendationEntry] = Field(default_factory=list)


class CandidatesProposed(EventData):
    """A new round: the candidates the named advisors are asked about."""

    rule: RuleRef
    round: int
    advisors: list[str]
    candidates: list[ObjectReference]
    advisor_rules: dict[str, Any] = Field(default_factory=dict)


class PlacementRuleDecided(EventData):
    """The rule's decisions and its status snapshot."""

    namespace: str
    name: str
    generation: int = 0
    decisions: list[ObjectReference] = Field(default_factory=list)
    candidates: list[ObjectReference] = Field(default_factory=list)
    eliminators: list[ObjectReference] = Field(default_factory=list)
    round: int = 0
    deleted: bool = False
