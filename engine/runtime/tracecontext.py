"""W3C trace context carried as plain data from the record that caused a decision to the records emitted for it.

The engine only copies it: it reads the input's `traceparent` Kafka header, or else the event's CloudEvents
distributed-tracing extension attribute, and puts both back on the outputs (platform P16). Spans are the
shell's business (`streams/tracing.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.runtime.records import Header, InputRecord
from topics.codec import loads

__all__ = [
    "TRACEPARENT",
    "TRACESTATE",
    "TraceContext",
    "from_envelope",
    "from_headers",
    "from_record",
    "valid_traceparent",
]

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_MAX_TRACESTATE = 512
"""W3C lets a receiver drop a tracestate longer than 512 characters; a hostile one cannot grow every output."""


def valid_traceparent(text: str) -> bool:
    """Whether `text` is a W3C traceparent this service may pass on: version 00 exactly 55 characters, a later
    version at least that with its first four fields as version 00's; never version ff, never all-zero ids."""
    match = _TRACEPARENT.fullmatch(text)
    if match is None:
        return False
    version, trace_id, parent_id, _, rest = match.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return False
    return trace_id != "0" * 32 and parent_id != "0" * 16


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A valid `traceparent` and the `tracestate` that came with it (None when absent, empty or too long)."""

    traceparent: str
    tracestate: str | None = None

    @classmethod
    def of(cls, traceparent: object, tracestate: object = None) -> TraceContext | None:
        """The context of two raw values; None when the traceparent is missing or malformed (ignored, never an
        error: tracing must not cost a record)."""
        if not isinstance(traceparent, str) or not valid_traceparent(traceparent):
            return None
        state = tracestate if isinstance(tracestate, str) and 0 < len(tracestate) <= _MAX_TRACESTATE else None
        return cls(traceparent, state)

    def headers(self) -> tuple[Header, ...]:
        """As Kafka headers (W3C's propagation on Kafka: header names as the HTTP ones)."""
        parent: Header = (TRACEPARENT, self.traceparent.encode())
        return (parent,) if self.tracestate is None else (parent, (TRACESTATE, self.tracestate.encode()))

    def extensions(self) -> dict[str, str]:
        """As CloudEvents distributed-tracing extension attributes."""
        attributes = {TRACEPARENT: self.traceparent}
        if self.tracestate is not None:
            attributes[TRACESTATE] = self.tracestate
        return attributes


def from_headers(headers: tuple[Header, ...]) -> TraceContext | None:
    """The context of a record's Kafka headers (the last of repeated ones), None without a valid traceparent."""
    if not headers:
        return None
    parent = state = None
    for name, value in headers:
        if name == TRACEPARENT:
            parent = value
        elif name == TRACESTATE:
            state = value
    if parent is None:
        return None
    return TraceContext.of(_text(parent), None if state is None else _text(state))


def from_envelope(attributes: dict[str, object] | None) -> TraceContext | None:
    """The context of a CloudEvent's extension attributes, None without a valid traceparent."""
    if not attributes:
        return None
    return TraceContext.of(attributes.get(TRACEPARENT), attributes.get(TRACESTATE))


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return None


def from_record(record: InputRecord) -> TraceContext | None:
    """The context of a record not otherwise decoded here (inventory, dead letters): its header, else its value's
    extension attribute, read only when the value names one."""
    found = from_headers(record.headers)
    if found is not None or record.value is None or b'"traceparent"' not in record.value:
        return found
    try:
        envelope = loads(record.value)
    except Exception:  # an unreadable value carries no context
        return None
    return from_envelope(envelope) if isinstance(envelope, dict) else None
