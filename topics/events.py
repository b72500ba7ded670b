"""The event catalogue: every versioned type, its data model and the topics it may appear on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel

from topics.base import KubeObject
from topics.errors import UnknownEventTypeError
from topics.inventory import (
    AddOnPlacementScore,
    ClusterTaintsUpdated,
    Deployer,
    InventoryResource,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
)
from topics.k8s import ObjectMeta
from topics.names import TopicRole
from topics.placement import Placement, PlacementDecided
from topics.placementrule import (
    CandidatesProposed,
    PlacementRule,
    PlacementRuleDecided,
    RecommendationPosted,
)
from topics.queue import (
    ApplicationCompleted,
    ApplicationPlaced,
    ApplicationRejected,
    ApplicationSubmitted,
    QueueConfigRejected,
)

__all__ = ["EVENT_KINDS", "EventKind", "ObjectDeleted", "parse_type", "versioned"]


class ObjectDeleted(KubeObject):
    """A `.deleted` event: the data names the object (the rest of the object may come along)."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta


@dataclass(frozen=True, slots=True)
class EventKind:
    """One event type without its version suffix."""

    name: str
    data_model: type[BaseModel]
    topic: TopicRole
    versions: frozenset[int] = frozenset({1})

    def wire_type(self, version: int = 1) -> str:
        """The type attribute as sent, e.g. `placement.applied.v1`."""
        return versioned(self.name, version)


_S, _C, _T = TopicRole.SUBMISSIONS, TopicRole.CLUSTER_STATUS, TopicRole.TAINTS
_R, _Q, _D = TopicRole.ADVISOR_RECOMMENDATIONS, TopicRole.ADVISOR_REQUESTS, TopicRole.DECISIONS

EVENT_KINDS: dict[str, EventKind] = {
    kind.name: kind
    for kind in (
        EventKind("managedcluster.applied", ManagedCluster, _C),
        EventKind("managedcluster.deleted", ObjectDeleted, _C),
        EventKind("managedclusterset.applied", ManagedClusterSet, _C),
        EventKind("managedclusterset.deleted", ObjectDeleted, _C),
        EventKind("managedclustersetbinding.applied", ManagedClusterSetBinding, _C),
        EventKind("managedclustersetbinding.deleted", ObjectDeleted, _C),
        EventKind("addonplacementscore.applied", AddOnPlacementScore, _C),
        EventKind("addonplacementscore.deleted", ObjectDeleted, _C),
        EventKind("deployer.applied", Deployer, _C),
        EventKind("deployer.deleted", ObjectDeleted, _C),
        EventKind("resource.applied", InventoryResource, _C),
        EventKind("resource.deleted", ObjectDeleted, _C),
        EventKind("cluster.taints.updated", ClusterTaintsUpdated, _T),
        EventKind("application.submitted", ApplicationSubmitted, _S),
        EventKind("application.completed", ApplicationCompleted, _S),
        EventKind("placement.applied", Placement, _S),
        EventKind("placement.deleted", ObjectDeleted, _S),
        EventKind("placementrule.applied", PlacementRule, _S),
        EventKind("placementrule.deleted", ObjectDeleted, _S),
        EventKind("recommendation.posted", RecommendationPosted, _R),
        EventKind("candidates.proposed", CandidatesProposed, _Q),
        EventKind("application.placed", ApplicationPlaced, _D),
        EventKind("application.rejected", ApplicationRejected, _D),
        EventKind("placement.decided", PlacementDecided, _D),
        EventKind("placementrule.decided", PlacementRuleDecided, _D),
        EventKind("queueconfig.rejected", QueueConfigRejected, _D),
    )
}

MAX_TYPE_CHARS = 256
"""Longer type attributes are refused before they are parsed: no catalogue type comes close."""
_STEM = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")
_VERSION = re.compile(r"0|[1-9][0-9]{0,8}")


def versioned(name: str, version: int = 1) -> str:
    """Append the version suffix to a bare event name."""
    return f"{name}.v{version}"


_EXACT: dict[str, tuple[EventKind, int]] = {
    kind.wire_type(version): (kind, version) for kind in EVENT_KINDS.values() for version in kind.versions
}
"""Every catalogue type as sent without a prefix, the way nearly every record names it: found by one lookup,
with the result `parse_type`'s general path gives."""


def parse_type(wire_type: str) -> tuple[EventKind, int]:
    """Find the catalogue entry of a wire type such as `placement.applied.v1`.

    A reverse-DNS prefix (`io.example.placement.applied.v1`) is accepted: the longest known suffix wins.
    """
    exact = _EXACT.get(wire_type)
    if exact is not None:
        return exact
    if len(wire_type) > MAX_TYPE_CHARS:
        raise UnknownEventTypeError(f"event type of {len(wire_type)} characters (at most {MAX_TYPE_CHARS})")
    stem, separator, number = wire_type.rpartition(".v")
    if not separator or _VERSION.fullmatch(number) is None or _STEM.fullmatch(stem) is None:
        raise UnknownEventTypeError(
            f"event type {wire_type!r} has no version suffix such as '.v1' (a number without leading zeros)"
        )
    version = int(number)
    parts = stem.split(".")
    for start in range(len(parts)):
        kind = EVENT_KINDS.get(".".join(parts[start:]))
        if kind is not None:
            if version not in kind.versions:
                known = ", ".join(f"v{v}" for v in sorted(kind.versions))
                raise UnknownEventTypeError(f"event type {wire_type!r}: version v{version} unknown (known: {known})")
            return kind, version
    raise UnknownEventTypeError(f"unknown event type {wire_type!r}")
