"""Which subject or inventory object a record is about, from its key and its payload."""

from __future__ import annotations

from pydantic import BaseModel

from engine.errors import RoutingError
from engine.inventory import ObjectKey
from engine.inventory.store import TAINTS_KIND
from topics.codec import DecodedEvent
from topics.events import ObjectDeleted
from topics.inventory import ClusterTaintsUpdated
from topics.placement import Placement
from topics.placementrule import PlacementRule, RecommendationPosted

__all__ = ["INVENTORY_KINDS", "changelog_key", "inventory_key", "split_changelog_key", "subject_key_of", "subject_kind"]

INVENTORY_KINDS: dict[str, str] = {
    "managedcluster": "ManagedCluster",
    "managedclusterset": "ManagedClusterSet",
    "managedclustersetbinding": "ManagedClusterSetBinding",
    "addonplacementscore": "AddOnPlacementScore",
    "deployer": "Deployer",
}
"""Event-name stem -> inventory kind; `resource.*` events carry their kind in the object."""

_SUBJECT_PARTS = {"Application": 2, "Placement": 3, "PlacementRule": 3}


def subject_kind(key: str) -> str:
    """The kind prefix of a subject key, checking its shape (`Application/<p>`, `Placement/<ns>/<name>`...)."""
    kind, _, _ = key.partition("/")
    parts = _SUBJECT_PARTS.get(kind)
    if parts is None:
        known = ", ".join(sorted(_SUBJECT_PARTS))
        raise RoutingError(f"record key {key!r} does not start with a subject kind ({known})")
    split = key.split("/")
    if len(split) != parts or not split[-1]:
        shape = "Application/<partition>" if parts == 2 else f"{kind}/<namespace>/<name>"
        raise RoutingError(f"record key {key!r} is not of the form {shape}")
    return kind


def changelog_key(subject: str, part: str) -> str:
    """The changelog record key of one part of a subject's state: the subject key, then `/<part>`."""
    return f"{subject}/{part}" if part else subject


def split_changelog_key(key: str) -> tuple[str, str]:
    """Subject key and part of a changelog record key (the inverse of `changelog_key`)."""
    parts = _SUBJECT_PARTS.get(key.partition("/")[0], 0)
    pieces = key.split("/", parts)
    subject = "/".join(pieces[:parts]) if parts else key
    subject_kind(subject)
    return subject, pieces[parts] if len(pieces) > parts else ""


def subject_key_of(event: DecodedEvent) -> str | None:
    """The subject key the payload names, where the payload names one (None for application events,
    whose partition spelling is the queue engine's to normalise)."""
    data: BaseModel = event.data
    if isinstance(data, RecommendationPosted):
        return f"PlacementRule/{data.rule.namespace}/{data.rule.name}"
    if isinstance(data, Placement | PlacementRule | ObjectDeleted):
        kind = "Placement" if event.kind.name.startswith("placement.") else "PlacementRule"
        return f"{kind}/{data.metadata.namespace}/{data.metadata.name}"
    return None


def inventory_key(event: DecodedEvent) -> ObjectKey:
    """Identity of the inventory object an inventory event names."""
    data = event.data
    if isinstance(data, ClusterTaintsUpdated):
        return ObjectKey(TAINTS_KIND, "", data.cluster)
    stem = event.kind.name.rsplit(".", 1)[0]
    kind = INVENTORY_KINDS.get(stem)
    if kind is None:
        kind = getattr(data, "kind", None)
        if not kind:
            raise RoutingError(f"{event.kind.name} data has no kind")
    meta = data.metadata  # type: ignore[attr-defined]
    namespace = "" if kind in ("ManagedCluster", "ManagedClusterSet") else meta.namespace
    return ObjectKey(str(kind), namespace, meta.name)
