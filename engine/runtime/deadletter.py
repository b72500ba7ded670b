"""Dead-letter records in the Kafka Connect convention: original key and value, error context in headers.

A dead letter must always fit the dead-letter topic, whose record limit is the broker's default (1 MiB): a value
or key too large to carry whole is cut to a bounded prefix, and headers say so and give the original size, so a
poison record can never block its partition by failing to be dead-lettered.
"""

from __future__ import annotations

import traceback

from engine.runtime.records import Header, InputRecord, OutputRecord
from engine.runtime.tracecontext import from_record
from topics.names import TopicRole

__all__ = ["MAX_DEAD_LETTER_KEY_BYTES", "MAX_DEAD_LETTER_VALUE_BYTES", "SERVICE_NAME", "dead_letter"]

SERVICE_NAME = "placement-stream"
MAX_DEAD_LETTER_VALUE_BYTES = 512 * 1024
"""The most of the original value a dead letter carries; with the bounded key and headers it stays well under
1 MiB."""
MAX_DEAD_LETTER_KEY_BYTES = 16 * 1024
_MAX_MESSAGE_CHARS = 4096
_MAX_TRACE_CHARS = 16 * 1024
_PREFIX = "__connect.errors."
_TRUNCATED = "placement.errors."
"""Our own headers beside Connect's: which parts were cut, and their original sizes."""


def dead_letter(record: InputRecord, stage: str, error: BaseException, *, bound_to_task: bool) -> OutputRecord:
    """Wrap a record that could not be processed.

    `bound_to_task` routes the dead letter into the input partition's transaction, so a poison record is
    dead-lettered exactly once and its offset still advances.
    """
    cls = type(error)
    trace = "".join(traceback.format_exception(cls, error, error.__traceback__, limit=8))
    key, key_cut = _bounded(record.key, MAX_DEAD_LETTER_KEY_BYTES)
    value, value_cut = _bounded(record.value, MAX_DEAD_LETTER_VALUE_BYTES)
    headers: list[Header] = [
        (_PREFIX + name, text.encode(errors="replace"))
        for name, text in (
            ("topic", record.topic_name or record.topic.value),
            ("partition", str(record.partition)),
            ("offset", str(record.offset)),
            ("connector.name", SERVICE_NAME),
            ("task.id", str(record.partition)),
            ("stage", stage),
            ("class.name", f"{SERVICE_NAME}.{record.topic.value}"),
            ("exception.class.name", f"{cls.__module__}.{cls.__qualname__}"),
            ("exception.message", _clip(str(error), _MAX_MESSAGE_CHARS)),
            ("exception.stacktrace", _clip(trace, _MAX_TRACE_CHARS)),
        )
    ]
    for part, original in (("key", key_cut), ("value", value_cut)):
        if original is not None:
            headers.append((f"{_TRUNCATED}{part}.truncated", b"true"))
            headers.append((f"{_TRUNCATED}{part}.original.bytes", str(original).encode()))
    context = from_record(record)
    if context is not None:  # a malformed context is left out, never the reason for anything (P16)
        headers += context.headers()
    return OutputRecord(
        topic=TopicRole.DEAD_LETTER,
        key=key,
        value=value,
        headers=tuple(headers),
        partition=record.partition if bound_to_task else None,
    )


def _bounded(raw: bytes | None, limit: int) -> tuple[bytes | None, int | None]:
    """The bytes cut to `limit`, and their original size when cut (None when whole)."""
    if raw is None or len(raw) <= limit:
        return raw, None
    return raw[:limit], len(raw)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
