"""OpenTelemetry spans for consume, decide and commit (platform P16), made only when an exporter is configured.

The engine carries a record's W3C trace context to the records it causes; this module puts three spans between
them, following OpenTelemetry's messaging conventions: `process <topic>` (CONSUMER) as a child of the input's
context, `decide` (INTERNAL) under it, and `send <decisions topic>` (PRODUCER) under that, whose context the
runtime then copies onto the outputs. The SDK is imported only by `from_environment` when the environment asks
for it, so a default install neither needs nor loads it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.runtime import Handover, InputRecord
from engine.runtime.records import Header
from engine.runtime.tracecontext import TRACEPARENT, TRACESTATE, TraceContext, from_record
from topics.codec import loads
from topics.names import TopicRole

__all__ = ["BatchSpans", "Tracing", "from_environment", "tracing_configured"]

log = logging.getLogger("placement.service")

_SUBJECT_TOPICS = frozenset({TopicRole.SUBMISSIONS, TopicRole.ADVISOR_RECOMMENDATIONS})
_CLOUDEVENT_ATTRIBUTES = (("id", "event_id"), ("source", "event_source"), ("type", "event_type"))


def tracing_configured(environ: Mapping[str, str]) -> bool:
    """Whether the environment names a trace exporter: `OTEL_TRACES_EXPORTER` other than `none`, or an OTLP
    endpoint; `OTEL_SDK_DISABLED=true` turns it off as the SDK itself would."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def from_environment(environ: Mapping[str, str], *, group: str, decisions_topic: str) -> Tracing | None:
    """The service's tracing, or None when no exporter is configured (nothing is imported then).

    Raises:
        ImportError: an exporter is configured but the `placement-stream[otel]` extra is not installed.
    """
    if not tracing_configured(environ):
        return None
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415 - only when configured
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter  # noqa: PLC0415

    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    provider = TracerProvider(resource=Resource.create({"service.name": "placement-stream"}))
    for name in names:
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif name != "none":
            log.warning("unknown OTEL_TRACES_EXPORTER entry ignored", extra={"exporter": name})
    return Tracing(provider, group=group, decisions_topic=decisions_topic)


class Tracing:
    """Makes each batch's spans from one tracer provider (the SDK's, or a test's with an in-memory exporter)."""

    def __init__(self, provider: Any, *, group: str, decisions_topic: str) -> None:
        from opentelemetry import trace  # noqa: PLC0415 - imported only once tracing is configured
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: PLC0415

        self.provider = provider
        self._trace = trace
        self._tracer = provider.get_tracer("placement-stream")
        self._propagator = TraceContextTextMapPropagator()
        self._group = group
        self._decisions_topic = decisions_topic

    def start(self, records: list[InputRecord]) -> BatchSpans:
        """Start the spans of a batch's records; `BatchSpans.inputs` are the records with the `send` span's
        context as their trace headers, for the runtime to copy onto their outputs."""
        spans = BatchSpans(self._trace)
        for record in records:
            spans.inputs.append(self._record_spans(record, spans))
        return spans

    def shutdown(self) -> None:
        """Export what is buffered (the SDK's processors flush on shutdown)."""
        self.provider.shutdown()

    def _record_spans(self, record: InputRecord, spans: BatchSpans) -> InputRecord:
        trace, kinds = self._trace, self._trace.SpanKind
        cause = from_record(record)
        parent = None if cause is None else self._propagator.extract(_carrier(cause))
        topic = record.topic_name or record.topic.value
        process = self._tracer.start_span(
            f"process {topic}", context=parent, kind=kinds.CONSUMER, attributes=self._consumed(record, topic)
        )
        if process.is_recording():
            _cloudevent_attributes(process, record.value)
        process.end()
        decide = self._tracer.start_span(
            "decide", context=trace.set_span_in_context(process), kind=kinds.INTERNAL, attributes=_subject(record)
        )
        task = record.partition if record.topic in _SUBJECT_TOPICS else None
        send = self._tracer.start_span(
            f"send {self._decisions_topic}",
            context=trace.set_span_in_context(decide),
            kind=kinds.PRODUCER,
            attributes=self._sending(task),
        )
        spans.add(task, decide, send)
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=trace.set_span_in_context(send))
        kept = tuple(h for h in record.headers if h[0] not in (TRACEPARENT, TRACESTATE))
        added: tuple[Header, ...] = tuple((name, value.encode()) for name, value in carrier.items())
        return replace(record, headers=kept + added)

    def _consumed(self, record: InputRecord, topic: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": str(record.partition),
            "messaging.consumer.group.name": self._group,
            "messaging.kafka.offset": record.offset,
        }
        if record.key is not None:
            attributes["messaging.kafka.message.key"] = record.key.decode(errors="replace")
        if record.value is None:
            attributes["messaging.kafka.message.tombstone"] = True
        return attributes

    def _sending(self, task: int | None) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "messaging.system": "kafka",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
            "messaging.destination.name": self._decisions_topic,
        }
        if task is not None:
            attributes["messaging.destination.partition.id"] = str(task)
        return attributes


@dataclass
class BatchSpans:
    """One batch's open spans: `decide` ends when its task's outputs are complete, `send` when the batch's
    transactions have committed (with an error status for a task whose transaction aborted)."""

    trace: Any
    inputs: list[InputRecord] = field(default_factory=list)
    _deciding: dict[int | None, list[Any]] = field(default_factory=dict)
    _sending: dict[int | None, list[Any]] = field(default_factory=dict)

    def add(self, task: int | None, decide: Any, send: Any) -> None:
        self._deciding.setdefault(task, []).append(decide)
        self._sending.setdefault(task, []).append(send)

    def watch(self, chunks: Iterable[Handover]) -> Iterator[Handover]:
        """The runtime's hand-overs, ending each task's `decide` spans when the runtime says it is finished."""
        for chunk in chunks:
            if chunk.finished is not None:
                for span in self._deciding.pop(chunk.finished, ()):
                    span.end()
            yield chunk
        self._end_deciding()

    def committed(self, aborted: Iterable[int]) -> None:
        """End every span; those of an aborted task's records say so (the records are consumed again)."""
        self._end_deciding()
        failed = set(aborted)
        for task, spans in self._sending.items():
            for span in spans:
                if task in failed:
                    span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, "transaction aborted"))
                span.end()
        self._sending.clear()

    def _end_deciding(self) -> None:
        for spans in self._deciding.values():
            for span in spans:
                span.end()
        self._deciding.clear()


def _carrier(context: TraceContext) -> dict[str, str]:
    return {TRACEPARENT: context.traceparent, **({TRACESTATE: context.tracestate} if context.tracestate else {})}


def _subject(record: InputRecord) -> dict[str, Any]:
    return {} if record.key is None else {"placement.subject.key": record.key.decode(errors="replace")}


def _cloudevent_attributes(span: Any, value: bytes | None) -> None:
    """OpenTelemetry's CloudEvents attributes of a sampled record (its envelope read once more, only then)."""
    if value is None:
        return
    try:
        envelope = loads(value)
    except Exception:  # the runtime dead-letters it; the span just lacks the attributes
        return
    if not isinstance(envelope, dict):
        return
    for name, attribute in _CLOUDEVENT_ATTRIBUTES:
        if isinstance(envelope.get(name), str):
            span.set_attribute(f"cloudevents.{attribute}", envelope[name])
    if isinstance(envelope.get("subject"), str):
        span.set_attribute("cloudevents.event_subject", envelope["subject"])
