"""From API objects to the records `apply -f` publishes, and to what differs from what was published.

Pure: the conversion is `topics.objects.convert`'s own; this module only decides which objects are taken, strips
what changes on every write without changing what the processor reads, and compares with `Published`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cli.watch.kinds import HANDOVER_ANNOTATION, WatchedKind, handed_over
from cli.watch.published import Entry, Published, digest_of
from topics.objects.convert import CONVERTERS, ApplyContext, ConversionError, NotApplicable, Outgoing

__all__ = ["WATCH_SOURCE", "Change", "change_of_deletion", "change_of_object", "changes_of_list", "object_id"]

WATCH_SOURCE = "/placement-stream/watch"
_VOLATILE_META = ("resourceVersion", "managedFields")
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Change:
    """Records to publish for one object, and its entry once they are acknowledged (None: forget it)."""

    object_id: str
    records: list[Outgoing]
    entry: Entry | None


def object_id(kind: WatchedKind, body: dict[str, Any]) -> str:
    meta = body.get("metadata") or {}
    name = meta.get("name", "")
    return f"{kind.kind}/{meta.get('namespace', '')}/{name}" if kind.namespaced else f"{kind.kind}/{name}"


def _as_published(kind: WatchedKind, body: dict[str, Any]) -> dict[str, Any]:
    """The object without what every write changes; a Placement without its status, which is the scheduler's
    own output (publishing it would make each decision written back come round as a new submission), and without
    the hand-over annotation: it tells upstream's controller to skip the Placement, and the engine skips one that
    carries it as upstream does (cluster-placement.md B3), while a Placement handed over is one to decide."""
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _VOLATILE_META}
    stripped = {**body, "apiVersion": body.get("apiVersion") or kind.api_version, "kind": kind.kind, "metadata": meta}
    if kind.kind == "Placement":
        stripped.pop("status", None)
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HANDOVER_ANNOTATION}
        meta.pop("annotations", None)
        if annotations:
            meta["annotations"] = annotations
    return stripped


def _context(now: datetime, *, delete: bool = False) -> ApplyContext:
    return ApplyContext(namespace="default", time=now, delete=delete, source=WATCH_SOURCE)


def _records(kind: WatchedKind, body: dict[str, Any], now: datetime, *, taken: bool) -> list[Outgoing] | None:
    """The object's records, or None when it is not taken (a Placement not handed over, a pod not YuniKorn's,
    an object the contract refuses, which is logged)."""
    if not taken:
        return None
    try:
        return CONVERTERS[kind.kind](body, _context(now))
    except NotApplicable:
        return None
    except ConversionError as exc:
        _log.warning("%s not published: %s", object_id(kind, body), exc)
        return None


def _deletion(object_key: str, entry: Entry, now: datetime) -> Change:
    records = CONVERTERS[entry.kind](entry.body, _context(now, delete=True))
    return Change(object_key, records, None)


def change_of_object(
    kind: WatchedKind, body: dict[str, Any], published: Published, now: datetime, *, take_all: bool
) -> Change | None:
    """An object added or modified: its records when they differ from the last published ones; its deletion
    records when it was published but is no longer taken (e.g. the hand-over annotation was removed)."""
    key = object_id(kind, body)
    before = published.get(key)
    shown = _as_published(kind, body)
    taken = take_all or kind.kind != "Placement" or handed_over(body)
    records = _records(kind, shown, now, taken=taken)
    if records is None:
        return None if before is None else _deletion(key, before, now)
    digest = digest_of(records)
    if before is not None and before.digest == digest:
        return None
    return Change(key, records, Entry(kind.kind, digest, shown))


def change_of_deletion(kind: WatchedKind, body: dict[str, Any], published: Published, now: datetime) -> Change | None:
    """An object deleted: the deletion records of what was published for it, if anything was."""
    key = object_id(kind, body)
    before = published.get(key)
    return None if before is None else _deletion(key, before, now)


def changes_of_list(
    kind: WatchedKind, items: Iterable[dict[str, Any]], published: Published, now: datetime, *, take_all: bool
) -> list[Change]:
    """A full list (a start, or after the watch expired): what differs from the published state, deletions of the
    objects no longer listed included."""
    changes: list[Change] = []
    listed: set[str] = set()
    for body in items:
        listed.add(object_id(kind, body))
        change = change_of_object(kind, body, published, now, take_all=take_all)
        if change is not None:
            changes.append(change)
    for key, entry in published.of_kind(kind.kind):
        if key not in listed:
            changes.append(_deletion(key, entry, now))
    return changes
