"""What `watch` last published per object, kept in a JSON file so a restart publishes only what differs.

Per object (`<Kind>/<namespace>/<name>`) it keeps a digest of the records it published (their keys and event
data, not their ids or times) and the object as published, from which its deletion records are made when it is
gone by the next list. The file is replaced atomically before and after each send: before, the change is
recorded as in doubt (no digest), so after a kill the next list publishes that object again, its new state or
its deletion, whether or not the broker had it; after, as published.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from streams.errors import ServiceError
from topics.objects.convert import Outgoing

__all__ = ["Entry", "Published", "digest_of", "in_doubt"]

_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Entry:
    """One object as last published."""

    kind: str
    digest: str
    body: dict[str, Any]


def digest_of(records: Sequence[Outgoing]) -> str:
    """What the records say: roles, keys and event data; two conversions of one object at different times agree."""
    said = [(r.role.value, r.key, None if r.value is None else (r.value["type"], r.value.get("data"))) for r in records]
    return hashlib.sha256(orjson.dumps(said, option=orjson.OPT_SORT_KEYS)).hexdigest()


def in_doubt(object_id: str, after: Entry | None, before: Entry | None) -> Entry:
    """The entry of a change being sent: the object it names (the new one, or for a deletion the old one) with no
    digest, which no list matches."""
    entry = after if after is not None else before
    if entry is None:
        raise ValueError(f"{object_id}: a deletion of an object never published")
    return Entry(entry.kind, "", entry.body)


class Published:
    """The entries by object id, loaded from and saved to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, Entry] = {}

    @classmethod
    def load(cls, path: Path) -> Published:
        """The file's entries; a missing file is an empty state (a first start publishes everything)."""
        published = cls(path)
        try:
            raw = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return published
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ServiceError(f"watch state file {path}: cannot be read: {exc}") from None
        if not isinstance(raw, dict) or raw.get("format") != _FORMAT or not isinstance(raw.get("objects"), dict):
            raise ServiceError(f"watch state file {path}: not a placement-stream watch state (format {_FORMAT})")
        for object_id, item in raw["objects"].items():
            published._entries[object_id] = Entry(item["kind"], item["digest"], item["body"])
        return published

    def get(self, object_id: str) -> Entry | None:
        return self._entries.get(object_id)

    def of_kind(self, kind: str) -> Iterator[tuple[str, Entry]]:
        return ((oid, entry) for oid, entry in list(self._entries.items()) if entry.kind == kind)

    def put(self, object_id: str, entry: Entry | None) -> None:
        if entry is None:
            self._entries.pop(object_id, None)
        else:
            self._entries[object_id] = entry

    def __len__(self) -> int:
        return len(self._entries)

    def save(self) -> None:
        """Write a temporary file and rename it over the old one: a reader never sees half a state."""
        objects = {oid: {"kind": e.kind, "digest": e.digest, "body": e.body} for oid, e in self._entries.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.partial")
        with partial.open("wb") as handle:
            handle.write(orjson.dumps({"format": _FORMAT, "objects": objects}))
            handle.flush()
            os.fsync(handle.fileno())
        partial.replace(self.path)
