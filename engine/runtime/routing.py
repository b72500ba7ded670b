"""Which subject or inventory object a record is about, from its key and its payload."""

from __future__ import annotations

from engine.errors import RoutingError
from engine.inventory import ObjectKey
from engine.inventory.store import TAINTS_KIND
from engine.registry import SUBJECT_ENGINES
from topics.codec import DecodedEvent
from topics.inventory import ClusterTaintsUpdated
from topics.names import TopicRole

__all__ = [
    "INVENTORY_KINDS",
    "changelog_key",
    "explain_key",
    "inventory_key",
    "inventory_record_key",
    "named_by_inventory_key",
    "shown",
    "split_changelog_key",
    "subject_key_of",
    "subject_kind",
]

INVENTORY_KINDS: dict[str, str] = {
    "managedcluster": "ManagedCluster",
    "managedclusterset": "ManagedClusterSet",
    "managedclustersetbinding": "ManagedClusterSetBinding",
    "addonplacementscore": "AddOnPlacementScore",
    "deployer": "Deployer",
}
"""Event-name stem -> inventory kind; `resource.*` events carry their kind in the object."""

_SHAPES = {engine.KIND: engine.KEY_SHAPE for engine in SUBJECT_ENGINES}
"""Each subject kind's key form, as its engine declares it."""
_SUBJECT_PARTS = {kind: shape.count("/") + 1 for kind, shape in _SHAPES.items()}
_BY_EVENT = {name: engine for engine in SUBJECT_ENGINES for name in engine.EVENTS}
_SHORT_KIND = "Placement"
"""The kind an explain request's `NS/NAME` names (what `--placement` always meant)."""


def shown(text: str, limit: int = 200) -> str:
    """A name as an error message quotes it: cut to `limit` characters, so a hostile 500 KB key cannot push the
    rest of the message out of a bounded dead-letter header."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


def subject_kind(key: str) -> str:
    """The kind prefix of a subject key, checking its shape (`Application/<p>`, `Placement/<ns>/<name>`...)."""
    kind, _, _ = key.partition("/")
    parts = _SUBJECT_PARTS.get(kind)
    if parts is None:
        known = ", ".join(sorted(_SUBJECT_PARTS))
        raise RoutingError(f"record key {shown(key)} does not start with a subject kind ({known})")
    split = key.split("/")
    if len(split) != parts or not split[-1]:
        raise RoutingError(f"record key {shown(key)} is not of the form {_SHAPES[kind]}")
    return kind


def explain_key(text: str) -> str:
    """The subject key an explain request names: a full subject key, or `NS/NAME` for a Placement (the common
    case, and what `--placement` always meant). Kubernetes namespaces are lower-case DNS labels, so a first segment
    that is a subject kind cannot be a namespace and the two spellings never collide.

    Raises:
        RoutingError: the text is not a subject key; the message says which shapes are accepted.
    """
    key = text.strip()
    kind = key.partition("/")[0]
    if kind not in _SUBJECT_PARTS and key.count("/") == 1:
        key, kind = f"{_SHORT_KIND}/{key}", _SHORT_KIND
    parts = _SUBJECT_PARTS.get(kind)
    if parts is None:
        raise RoutingError(f"{text!r} is not a subject key: expected {_explain_shapes()}")
    segments = key.split("/")
    if len(segments) != parts or not all(segments):
        raise RoutingError(f"{text!r} is not a subject key: expected {_explain_shape(kind)}")
    if any(ch.isspace() or not ch.isprintable() for ch in key):
        raise RoutingError(f"{text!r} is not a subject key: names hold no spaces or control characters")
    return key


def _typed(kind: str) -> str:
    """A kind's key form as a user types it: `Placement/NS/NAME`."""
    segments = [part.strip("<>").upper() for part in _SHAPES[kind].split("/")[1:]]
    return "/".join([kind, *("NS" if part == "NAMESPACE" else part for part in segments)])


def _explain_shape(kind: str) -> str:
    typed = _typed(kind)
    return f"{typed.removeprefix(kind + '/')} or {typed}" if kind == _SHORT_KIND else typed


def _explain_shapes() -> str:
    kinds = sorted(_SHAPES, key=lambda kind: kind != _SHORT_KIND)
    shown_kinds = [f"{_typed(_SHORT_KIND).removeprefix(_SHORT_KIND + '/')} (a {_SHORT_KIND.lower()})"]
    shown_kinds += [_typed(kind) for kind in kinds]
    return f"{', '.join(shown_kinds[:-1])} or {shown_kinds[-1]}"


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
    """The subject key the payload names, as the engine that takes the event says (`SubjectEngine.subject_of`);
    None where it names none, or no engine takes the event."""
    engine = _BY_EVENT.get(event.kind.name)
    return None if engine is None else engine.subject_of(event)


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


def inventory_record_key(topic: TopicRole, named: ObjectKey) -> str:
    """The record key an inventory object goes under: its `Kind/[namespace/]name`, except on the taints topic,
    which is keyed by the cluster name alone (one taint set per cluster)."""
    return named.name if topic is TopicRole.TAINTS else named.record_key()


def named_by_inventory_key(topic: TopicRole, key: str) -> ObjectKey:
    """The inventory object a record key names (what a tombstone deletes); the inverse of `inventory_record_key`."""
    return ObjectKey(TAINTS_KIND, "", key) if topic is TopicRole.TAINTS else ObjectKey.parse(key)
