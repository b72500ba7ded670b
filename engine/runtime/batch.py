"""One batch's outputs and bookkeeping, with the deterministic event ids its outputs carry."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

from engine.core import Emit
from engine.runtime.records import Header, InputRecord, OutputRecord
from engine.runtime.tracecontext import TraceContext
from topics.codec import encode_event
from topics.envelope import CONTENT_TYPE

__all__ = ["Batch"]

_CE_HEADERS = (("content-type", CONTENT_TYPE.encode()),)
_ID_NAMESPACE = uuid.UUID("6f1c0f4e-3b5a-4f7e-9d62-2b8f4c1a7e55")


def _uuid5_text(sha1: bytes) -> str:
    """`str(uuid.UUID(bytes=sha1[:16], version=5))` without building the UUID: its version and variant bits
    set, as hex in 8-4-4-4-12 groups (one id per emitted event, so the object's cost showed)."""
    raw = bytearray(sha1[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class Batch:
    """Outputs and bookkeeping of one batch. `seed` names the batch's inputs, so the same inputs always get the
    same event ids (replay is byte-for-byte repeatable, and a deployer can dedupe by id)."""

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._id_prefix: hashlib._Hash | None = None
        """uuid5's hash over the namespace and the name's batch part, continued per event: a re-decision of
        thousands of placements numbers thousands of events. Made at the first event: most batches emit none."""
        self.outputs: list[OutputRecord] = []
        self.dirty: set[str] = set()
        self.touched: set[str] = set()
        self.before: dict[str, Any] = {}
        """Subject key -> its state when the batch first touched it: what a failed decision reverts to."""
        self.causes: dict[str, list[InputRecord]] = {}
        """Subject key -> the records of this batch applied to it: what a failed decision dead-letters."""
        self.traces: dict[str, TraceContext] = {}
        """Subject key -> the trace context of the input that caused its decision (platform P16); its emits carry it."""
        self.events = 0

    def next_id(self) -> str:
        """uuid5(namespace, "<seed>/<n>"), numbered by event, not by output record, so where changelog entries
        fall does not move the ids."""
        prefix = self._id_prefix
        if prefix is None:
            name = hashlib.sha256(self._seed.encode()).hexdigest() + "/"
            prefix = self._id_prefix = hashlib.sha1(_ID_NAMESPACE.bytes + name.encode(), usedforsecurity=False)
        digest = prefix.copy()
        digest.update(str(self.events).encode())
        self.events += 1
        return _uuid5_text(digest.digest())

    def hand_over(self) -> list[OutputRecord]:
        """The outputs added since the last hand-over; the batch keeps none of them."""
        new, self.outputs = self.outputs, []
        return new

    def emit(self, subject: str | None, emit: Emit, now: datetime) -> None:
        """Add the record an engine asked for: its event encoded with the batch's next id (none for a tombstone),
        keyed by `emit.key` or else the subject."""
        key = emit.key or subject
        if key is None:
            raise ValueError("an emit without a subject needs an explicit key")
        trace = self.traces.get(subject) if subject is not None and self.traces else None
        value = None
        if emit.kind is not None:
            value = encode_event(
                kind_name=emit.kind,
                data=emit.data,
                subject=key,
                event_id=self.next_id(),
                time=now,
                extensions=None if trace is None else trace.extensions(),
            )
        headers: tuple[Header, ...] = _CE_HEADERS if value is not None else ()
        if trace is not None:
            headers += trace.headers()
        self.outputs.append(
            OutputRecord(topic=emit.topic, key=key.encode(), value=value, headers=headers, subject=subject)
        )
