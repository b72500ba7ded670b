"""Embedded mode: the same runtime over an in-memory bus, the clock driven by event times.

Each input line is one batch, written out (and flushed) before the next line is read, so an interactive
driver such as an advisor simulator can answer requests as they appear. The command shows people what they
asked about (decisions, advisor requests, dead letters) unless told to show everything, and reports every
dead-lettered line on stderr with its number and reason.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from engine.core import SubjectEngine
from engine.inventory import ObjectKey
from engine.registry import build_engines
from engine.runtime import Handover, InputRecord, OutputRecord, Runtime
from engine.runtime.records import Header
from engine.runtime.routing import inventory_key, subject_key_of
from engine.runtime.tracecontext import TRACEPARENT, TRACESTATE
from streams.errors import ServiceError
from streams.queueconfig import QueueConfigFile
from streams.settings import Settings
from streams.tuning import tune_garbage_collector
from topics.codec import decode_event
from topics.names import TopicRole

__all__ = ["PEOPLE_ROLES", "ReplayError", "Replayer", "parse_time"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DLQ = "__connect.errors."
_TRACE_HEADERS = frozenset({TRACEPARENT, TRACESTATE})

PEOPLE_ROLES = frozenset({TopicRole.DECISIONS, TopicRole.ADVISOR_REQUESTS, TopicRole.DEAD_LETTER})
"""What the command prints by default: the answers, the questions to advisors and what was refused; the
changelog is the processor's own bookkeeping."""


class ReplayError(ServiceError, ValueError):
    """An input line cannot be replayed; the message names the line."""


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 string (or epoch milliseconds) as aware UTC; None when absent or unreadable."""
    if value is None:
        return None
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


class Replayer:
    """Feeds JSONL lines through a Runtime and writes every produced record as JSONL."""

    def __init__(
        self,
        settings: Settings,
        out: IO[bytes],
        *,
        queue_config: Path | None = None,
        engines: list[SubjectEngine[Any]] | None = None,
        warn: Callable[[str], None] | None = None,
        show: Collection[TopicRole] | None = None,
        on_dead_letter: Callable[[str], None] | None = None,
    ) -> None:
        """`show` limits the records written (None: all); `on_dead_letter` hears `line N: ...` per dead letter."""
        self.settings = settings
        self.out = out
        self.show = None if show is None else frozenset(show)
        self.on_dead_letter = on_dead_letter
        self.dead_letters = 0
        """Records dead-lettered so far (whether shown or not)."""
        self.line_number = 0
        self._key_problem = ""
        tune_garbage_collector(settings.gc_threshold)
        self.warn = warn or (lambda text: print(text, file=sys.stderr))
        self._names = settings.topics.roles()
        self._names.update({role.value: role for role in TopicRole})
        self._offsets: dict[TopicRole, int] = {}
        self.clock: datetime | None = None
        self._config_file = QueueConfigFile(queue_config) if queue_config else None
        config = self._config_file.load_initial() if self._config_file else None
        self.runtime = Runtime(engines or build_engines(), settings.engine_settings(), config)

    # --- driving ----------------------------------------------------------------------------------
    def run(self, lines: Iterable[bytes | str]) -> int:
        """Replay every line; returns the number of lines that could not be replayed."""
        bad = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            self.line_number = number
            try:
                self.feed(line)
            except ReplayError as exc:
                bad += 1
                self.warn(f"line {number}: {exc}")
        return bad

    def feed(self, line: bytes | str) -> None:
        """Replay one line: advance the clock, fire due timers, reload the queue config, apply the record."""
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ReplayError(f"not JSON: {exc}") from exc
        if not isinstance(item, dict):
            raise ReplayError("expected an object with topic, key and value")
        value = item.get("value")
        event_time = parse_time(value.get("time")) if isinstance(value, dict) else None
        self._advance(parse_time(item.get("timestamp")), event_time)
        now = self.now
        self._reload_queue_config(now)
        if "topic" not in item:
            return
        role = self._names.get(str(item["topic"]))
        if role is None:
            raise ReplayError(f"unknown topic {item['topic']!r}")
        raw = self._value_bytes(value, line)
        key = item.get("key")
        self._key_problem = ""
        if key is None and raw is not None:
            key, self._key_problem = _derive_key(role, raw)
        elif key is None:
            self._key_problem = 'a null value (a tombstone) needs the "key" it deletes'
        offset = self._offsets.get(role, 0)
        self._offsets[role] = offset + 1
        record = InputRecord(
            topic=role,
            partition=0,
            offset=offset,
            key=None if key is None else str(key).encode(),
            value=raw,
            timestamp=now,
            topic_name=self.settings.topics.name(role),
            headers=_headers(item.get("headers")),
        )
        self._write_chunks(self.runtime.process_chunks([record], now))

    # --- internals --------------------------------------------------------------------------------
    def _advance(self, *candidates: datetime | None) -> None:
        latest = max((t for t in (self.clock, *candidates) if t is not None), default=None)
        if latest is None:
            return
        self._write_chunks(self.runtime.fire_timer_chunks(latest))
        self.clock = latest

    @property
    def now(self) -> datetime:
        """The replay clock (the epoch until an input carries a time)."""
        return self.clock or _EPOCH

    def _reload_queue_config(self, now: datetime) -> None:
        if self._config_file is None:
            return
        reload, outputs = self._config_file.apply_changes(self.runtime, now)
        if reload is not None and reload.error is not None:
            self.warn(f"queue configuration {self._config_file.path} rejected: {reload.error}")
        self._write(outputs)

    @staticmethod
    def _value_bytes(value: Any, line: bytes | str) -> bytes | None:
        """The record value as a producer would have sent it. A value nested too deeply to be written again is
        passed on as the whole input line, which the runtime dead-letters for its nesting like any such value."""
        if value is None:
            return None
        if isinstance(value, str):
            return value.encode()
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            return line.encode() if isinstance(line, str) else line

    def _write(self, records: Iterable[OutputRecord]) -> None:
        out = self.out
        for record in records:
            if record.topic is TopicRole.DEAD_LETTER:
                self._report_dead_letter(record)
            if self.show is not None and record.topic not in self.show:
                continue
            rendered = self.render(record)
            try:
                encoded = orjson.dumps(rendered)
            except orjson.JSONEncodeError:  # a dead letter's value nested too deeply for JSON output: as text
                rendered["value"] = None if record.value is None else record.value.decode(errors="replace")
                encoded = orjson.dumps(rendered)
            out.write(encoded + b"\n")
        out.flush()

    def _report_dead_letter(self, record: OutputRecord) -> None:
        """Count it and tell the listener why; a keyless line also says why no key could be derived, since the
        runtime can only say that the key is missing."""
        self.dead_letters += 1
        if self.on_dead_letter is None:
            return
        headers = {name: value.decode(errors="replace") for name, value in record.headers}
        stage = headers.get(_DLQ + "stage", "?")
        reason = headers.get(_DLQ + "exception.message", "") or headers.get(_DLQ + "exception.class.name", "")
        where = f"line {self.line_number}" if self.line_number else "input"
        text = f"{where}: dead-lettered at {stage}: {reason}"
        if self._key_problem:
            text += f' (the line has no "key", and none can be derived: {self._key_problem})'
        self.on_dead_letter(text)

    def _write_chunks(self, chunks: Iterable[Handover]) -> None:
        """Write each hand-over as the runtime produces it: a long run of timers is never held in memory."""
        for chunk in chunks:
            self._write(chunk.records)

    def render(self, record: OutputRecord) -> dict[str, Any]:
        """An output record as a JSONL object."""
        line: dict[str, Any] = {
            "topic": self.settings.topics.name(record.topic),
            "key": None if record.key is None else record.key.decode(errors="replace"),
            "value": _json_or_text(record.value),
        }
        if record.topic is TopicRole.DEAD_LETTER or (record.headers and record.headers[-1][0] in _TRACE_HEADERS):
            line["headers"] = {name: value.decode(errors="replace") for name, value in record.headers}
        return line


def _headers(value: Any) -> tuple[Header, ...]:
    """A line's optional `headers` object as Kafka headers: string values only (the trace context's)."""
    if not isinstance(value, dict):
        return ()
    return tuple((str(name), text.encode()) for name, text in value.items() if isinstance(text, str))


def _json_or_text(value: bytes | None) -> Any:
    if value is None:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value.decode(errors="replace")


def _derive_key(role: TopicRole, raw: bytes) -> tuple[str | None, str]:
    """The record key a well-formed event would have been sent with (replay input may omit keys), or None and
    why not: the value's own problem, which the runtime's dead letter for the missing key would hide."""
    try:
        event = decode_event(raw, role)
    except Exception as exc:  # an undecodable value keeps no key and is dead-lettered by the runtime
        return None, str(exc)
    if role in (TopicRole.CLUSTER_STATUS, TopicRole.TAINTS):
        try:
            named: ObjectKey = inventory_key(event)
        except Exception as exc:
            return None, str(exc)
        return (named.name if role is TopicRole.TAINTS else named.record_key()), ""
    subject = subject_key_of(event)
    if subject is None:
        partition = str(getattr(event.data, "partition", "") or "default")
        subject = "Application/" + ("default" if partition.lower() == "default" else partition)
    return subject, ""
