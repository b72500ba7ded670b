"""JSON Schema of whole records: the CloudEvents envelope with the `data` of one event type.

One schema per type, `type` fixed to that type's wire name, so a producer in another language can validate the
exact value it is about to send (the service also accepts a reverse-DNS prefix before the type name).
"""

from __future__ import annotations

from typing import Any

from topics.events import EVENT_KINDS, EventKind

__all__ = ["JSON_SCHEMA_DIALECT", "all_event_schemas", "event_schema"]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_ENVELOPE_REQUIRED = ["specversion", "id", "source", "type", "data"]


def _envelope_properties(wire_type: str, topic: str) -> dict[str, Any]:
    return {
        "specversion": {"const": "1.0", "description": "CloudEvents 1.0, structured JSON mode"},
        "id": {"type": "string", "minLength": 1, "description": "unique per source; a retry keeps the id"},
        "source": {"type": "string", "minLength": 1, "description": "URI reference of the producer"},
        "type": {"const": wire_type, "description": f"versioned event type, sent on the {topic} topic"},
        "time": {"type": "string", "format": "date-time", "description": "RFC 3339; drives replay's clock"},
        "subject": {"type": "string", "description": "the record key"},
        "datacontenttype": {"const": "application/json"},
        "partitionkey": {"type": "string", "description": "extension: the record key, on records the service writes"},
        "traceparent": {
            "type": "string",
            "description": "distributed-tracing extension: W3C traceparent of the cause (a malformed one is ignored)",
        },
        "tracestate": {"type": "string", "description": "distributed-tracing extension: W3C tracestate"},
    }


def event_schema(kind: EventKind, version: int = 1) -> dict[str, Any]:
    """The schema of a whole record value of `kind`: envelope attributes, then `data` as the type's model.

    Extension attributes are allowed, as CloudEvents allows them; the data model's definitions move to the top
    level so its `#/$defs/...` references resolve unchanged.
    """
    wire_type = kind.wire_type(version)
    data = kind.data_model.model_json_schema(by_alias=True, mode="validation")
    definitions = data.pop("$defs", {})
    schema: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"{wire_type}.schema.json",
        "title": wire_type,
        "type": "object",
        "properties": {**_envelope_properties(wire_type, kind.topic.value), "data": data},
        "required": list(_ENVELOPE_REQUIRED),
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
    }
    if definitions:
        schema["$defs"] = definitions
    return schema


def all_event_schemas() -> dict[str, dict[str, Any]]:
    """Wire type -> record schema, for every type and version of the catalogue."""
    return {
        kind.wire_type(version): event_schema(kind, version)
        for kind in EVENT_KINDS.values()
        for version in sorted(kind.versions)
    }
