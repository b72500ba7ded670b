"""Dead-letter records in the Kafka Connect convention: original key and value, error context in headers."""

from __future__ import annotations

import traceback

from engine.runtime.records import Header, InputRecord, OutputRecord
from topics.names import TopicRole

__all__ = ["SERVICE_NAME", "dead_letter"]

SERVICE_NAME = "placement-stream"
_PREFIX = "__connect.errors."


def dead_letter(record: InputRecord, stage: str, error: BaseException, *, bound_to_task: bool) -> OutputRecord:
    """Wrap a record that could not be processed.

    `bound_to_task` routes the dead letter into the input partition's transaction, so a poison record is
    dead-lettered exactly once and its offset still advances.
    """
    cls = type(error)
    trace = "".join(traceback.format_exception(cls, error, error.__traceback__, limit=8))
    headers: tuple[Header, ...] = tuple(
        (_PREFIX + name, value.encode())
        for name, value in (
            ("topic", record.topic_name or record.topic.value),
            ("partition", str(record.partition)),
            ("offset", str(record.offset)),
            ("connector.name", SERVICE_NAME),
            ("task.id", str(record.partition)),
            ("stage", stage),
            ("class.name", f"{SERVICE_NAME}.{record.topic.value}"),
            ("exception.class.name", f"{cls.__module__}.{cls.__qualname__}"),
            ("exception.message", str(error)),
            ("exception.stacktrace", trace),
        )
    )
    return OutputRecord(
        topic=TopicRole.DEAD_LETTER,
        key=record.key,
        value=record.value,
        headers=headers,
        partition=record.partition if bound_to_task else None,
    )
