"""What the changelog holds of each subject, so that only changes are written.

For every subject the runtime remembers the state object the changelog holds (nothing is dumped again while it
stands, and parted engines diff against it) and a digest of the subject's own entry (a rewrite with the same
bytes is skipped; a digest, not the entry, which can be tens of kilobytes for a large decision).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from engine.core import PartedStateEngine, StatePart, SubjectEngine
from engine.errors import EngineError, UnreadableState
from engine.runtime.records import OutputRecord
from engine.runtime.routing import changelog_key
from topics.codec import dumps
from topics.names import TopicRole

__all__ = ["ChangelogMemory", "reading_entry"]

Remembered = tuple[Any, bytes | None]


class ChangelogMemory:
    """The written state and entry digest of each subject."""

    def __init__(self) -> None:
        self._digests: dict[str, bytes] = {}
        self._written: dict[str, Any] = {}

    def restored_entry(self, key: str, value: bytes | None) -> None:
        """The subject's own entry was loaded: these are the bytes the changelog holds for it."""
        self._set_digest(key, None if value is None else _digest(value))

    def restored(self, key: str, state: Any) -> None:
        """The subject's entries were loaded: `state` is what the changelog holds."""
        self._remember(key, state)

    def forget(self, key: str) -> None:
        """The subject is no longer owned here."""
        self._digests.pop(key, None)
        self._written.pop(key, None)

    def snapshot(self, key: str) -> Remembered:
        """What is remembered of a subject now, to go back to after a failure."""
        return self._written.get(key), self._digests.get(key)

    def revert(self, key: str, snapshot: Remembered) -> None:
        """Go back to a snapshot: entries made since were withdrawn."""
        self._remember(key, snapshot[0])
        self._set_digest(key, snapshot[1])

    def entries(
        self, key: str, state: Any, engine: SubjectEngine[Any], parted: PartedStateEngine | None
    ) -> list[OutputRecord]:
        """The changelog records that bring the changelog from what it holds to `state`, and remember them."""
        written = self._written.get(key)
        if written is state:  # untouched since written or restored (engines return the same object then)
            return []
        self._remember(key, state)
        parts: Iterable[StatePart]
        if parted is not None:
            parts = parted.state_changes(written, state)
        else:
            parts = (("", None if state is None else engine.dump_state(state)),)
        records = []
        for part, raw in parts:
            value = None if raw is None else dumps({"kind": engine.KIND, "v": 1, "state": raw})
            if not part:  # the subject's own entry is rewritten only when its bytes change
                digest = None if value is None else _digest(value)
                if digest == self._digests.get(key):
                    continue
                self._set_digest(key, digest)
            records.append(OutputRecord(TopicRole.CHANGELOG, changelog_key(key, part).encode(), value, subject=key))
        return records

    def _remember(self, key: str, state: Any) -> None:
        if state is None:
            self._written.pop(key, None)
        else:
            self._written[key] = state

    def _set_digest(self, key: str, digest: bytes | None) -> None:
        if digest is None:
            self._digests.pop(key, None)
        else:
            self._digests[key] = digest


_ENTRY_ERRORS = (ValueError, KeyError, TypeError, EngineError)


def reading_entry(record_key: str) -> UnreadableState:
    """Any error reading a changelog entry becomes InvalidStateError naming it, so the reader skips it and goes on."""
    return UnreadableState(f"changelog entry {record_key} cannot be read", _ENTRY_ERRORS)


def _digest(value: bytes) -> bytes:
    return hashlib.blake2b(value, digest_size=16).digest()
