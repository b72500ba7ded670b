"""The one JSON codec (orjson): record bytes to typed events and back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from topics.base import EventData
from topics.envelope import SOURCE, CloudEvent
from topics.errors import DecodeError, SchemaError
from topics.events import EVENT_KINDS, EventKind, parse_type, versioned
from topics.interning import Interning
from topics.names import TopicRole

__all__ = [
    "MAX_NESTING",
    "MAX_VALUE_BYTES",
    "DecodedEvent",
    "check_nesting",
    "decode_event",
    "dump_model",
    "dumps",
    "encode_event",
    "loads",
]

MAX_VALUE_BYTES = 1_572_864
"""The largest record value decoded: 1.5 MiB, the object size etcd (and so a Kubernetes API server) stores, so no
upstream object is refused; larger values are dead-lettered before they are parsed."""

MAX_NESTING = 64
"""The deepest nesting of objects and arrays a value may have. Upstream objects nest about 10 levels; state that
holds a value must be serialisable again, and orjson refuses to write more than 255 levels."""


@dataclass(frozen=True, slots=True)
class DecodedEvent:
    """A validated event: envelope, catalogue entry and typed data."""

    envelope: CloudEvent
    kind: EventKind
    version: int
    data: BaseModel

    @property
    def time(self) -> datetime | None:
        """The producer's event time, if it sent one."""
        return self.envelope.time


def dumps(value: Any) -> bytes:
    """Serialise plain JSON values; keys keep insertion order so output is byte-stable."""
    return orjson.dumps(value)


def loads(raw: bytes | str) -> Any:
    """Parse JSON bytes."""
    return orjson.loads(raw)


def dump_model(model: BaseModel, given: Mapping[str, Any] | None = None, *, serialised: bool = False) -> dict[str, Any]:
    """A model as wire JSON: camelCase aliases, no nulls; plain-JSON fields of event data as they are. `given`:
    the JSON of some fields (by field name) that the caller already has, e.g. of a spec many models share; it
    takes the field's place as model_dump orders it (declared fields, then unknown ones). `serialised`: the
    result is only passed to `dumps`, so plain-JSON fields may hold parts already serialised
    (`EventData.json_field`)."""
    wire = model.json_field if serialised and isinstance(model, EventData) else None
    raw_fields = model.JSON_FIELDS if isinstance(model, EventData) else frozenset()
    if not raw_fields and not given:
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    given = given or {}
    rest = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=set(raw_fields) | set(given))
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():  # field order, as model_dump writes it
        alias = field.alias or name
        if name in given:
            out[alias] = given[name]
        elif name in raw_fields:
            value = getattr(model, name)
            if value is not None:
                out[alias] = value if wire is None else wire(name, value)
        elif alias in rest:
            out[alias] = rest[alias]
    out.update((key, value) for key, value in rest.items() if key not in out)  # unknown fields, after the rest
    return out


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def check_nesting(value: Any, limit: int = MAX_NESTING) -> None:
    """Raise DecodeError when objects and arrays nest deeper than `limit` (walked without recursion)."""
    level: list[Any] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise DecodeError(f"value nests deeper than {limit} levels")
        inner: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                inner.extend(v for v in item.values() if isinstance(v, dict | list))
            elif isinstance(item, list):
                inner.extend(v for v in item if isinstance(v, dict | list))
        level = inner


def decode_event(value: bytes, topic: TopicRole, interning: Interning | None = None) -> DecodedEvent:
    """Decode and validate one record value read from `topic`; with a runtime's `interning`, the parts of the
    payload that many events repeat are shared with the equal ones already decoded (topics/interning.py).

    Raises DecodeError (not JSON, too large, too deep), UnknownEventTypeError (type or version unknown) or
    SchemaError.
    """
    if len(value) > MAX_VALUE_BYTES:
        raise DecodeError(f"value is {len(value)} bytes, more than the {MAX_VALUE_BYTES} a record may have")
    try:
        raw = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"value is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise DecodeError(f"value is JSON {type(raw).__name__}, expected a CloudEvent object")
    if value.count(b"{") + value.count(b"[") > MAX_NESTING:  # fewer brackets cannot nest that deep: no walk
        check_nesting(raw)
    try:
        envelope = CloudEvent.model_validate(raw)
    except ValidationError as exc:
        raise SchemaError(f"invalid CloudEvent envelope: {_describe(exc)}") from exc
    kind, version = parse_type(envelope.type)
    if kind.topic is not topic:
        raise SchemaError(f"event type {envelope.type!r} does not belong on the {topic.value} topic")
    try:
        data = kind.data_model.model_validate(envelope.data, context=interning)
    except ValidationError as exc:
        raise SchemaError(f"invalid data for {envelope.type}: {_describe(exc)}") from exc
    return DecodedEvent(envelope=envelope, kind=kind, version=version, data=data)


_last_time: tuple[datetime | None, str] = (None, "")
"""The instant `_event_time` formatted last and its text: a batch stamps all its events with one `now`."""


def _event_time(time: datetime) -> str:
    """The CloudEvent time attribute of `time` (RFC 3339, UTC as `Z`), formatting only a new instant: that
    costs more than the rest of an envelope. Equal instants with equal UTC offsets format alike."""
    global _last_time  # noqa: PLW0603 - a one-entry memo; a race costs a miss, never a wrong text
    last, text = _last_time
    if last is None or not (last is time or (last == time and last.utcoffset() == time.utcoffset())):
        text = time.isoformat().replace("+00:00", "Z")
        _last_time = (time, text)
    return text


def encode_event(
    *,
    kind_name: str,
    data: BaseModel | None,
    subject: str,
    event_id: str,
    time: datetime,
    source: str = SOURCE,
    extensions: Mapping[str, str] | None = None,
) -> bytes:
    """Wrap `data` in a CloudEvent of catalogue type `kind_name` (version 1) and serialise it; `extensions` are
    extension attributes (e.g. the distributed-tracing ones), put after `partitionkey`."""
    kind = EVENT_KINDS[kind_name]
    if data is not None and not isinstance(data, kind.data_model):
        raise TypeError(f"{kind_name} carries {kind.data_model.__name__}, got {type(data).__name__}")
    envelope: dict[str, Any] = {
        "specversion": "1.0",
        "id": event_id,
        "source": source,
        "type": versioned(kind.name),
        "time": _event_time(time),
        "subject": subject,
        "partitionkey": subject,
    }
    if extensions:
        envelope.update(extensions)
    envelope["datacontenttype"] = "application/json"
    envelope["data"] = None if data is None else dump_model(data, serialised=True)
    return orjson.dumps(envelope)
