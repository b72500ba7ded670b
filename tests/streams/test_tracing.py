"""Spans for consume, decide and commit (platform P16): made only when configured, parented on the input's trace
context, and the outputs carry the `send` span's context in the same trace."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from engine.runtime import OutputRecord, Runtime
from streams.tracing import Tracing, from_environment, tracing_configured
from tests.engine.runtime.test_runtime_processor import T0, CountingEngine, cluster, placement
from topics.names import TopicRole

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
PARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
SUBMISSIONS = TopicRole.SUBMISSIONS.value  # the topic name the test records carry


@pytest.mark.parametrize(
    ("environ", "configured"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
    ],
)
def test_tracing_is_configured_by_the_environment(environ: dict[str, str], configured: bool) -> None:
    assert tracing_configured(environ) is configured
    tracing = from_environment(environ, group="g", decisions_topic="d")
    assert (tracing is not None) is configured
    if tracing is not None:
        tracing.shutdown()


def test_the_service_does_not_import_opentelemetry_unless_configured() -> None:
    code = "import sys, streams.service, cli.main; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    environ = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ)
    assert out.stdout.strip() == "False"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Tracing:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider, group="placement", decisions_topic="placement.decisions")


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def decision(out: list[OutputRecord]) -> OutputRecord:
    [found] = [o for o in out if o.topic is TopicRole.DECISIONS]
    return found


def test_spans_follow_the_inputs_context_and_the_decision_carries_the_send_span(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    runtime = Runtime([CountingEngine()])
    runtime.process([cluster("c1", "gpu")], T0)
    source = replace(placement("p1", "gpu"), headers=(("traceparent", PARENT.encode()), ("tracestate", b"k=v")))
    spans = tracing.start([source])
    out = [r for chunk in spans.watch(runtime.process_chunks(spans.inputs, T0)) for r in chunk.records]
    spans.committed([])

    found = by_name(exporter.get_finished_spans())
    process, decide, send = found[f"process {SUBMISSIONS}"], found["decide"], found["send placement.decisions"]
    assert (process.kind, decide.kind, send.kind) == (SpanKind.CONSUMER, SpanKind.INTERNAL, SpanKind.PRODUCER)
    assert {span.context.trace_id for span in (process, decide, send)} == {int(TRACE_ID, 16)}
    assert process.parent is not None and process.parent.span_id == int(PARENT_ID, 16)
    assert process.parent.is_remote
    assert decide.parent is not None and decide.parent.span_id == process.context.span_id
    assert send.parent is not None and send.parent.span_id == decide.context.span_id
    assert process.context.trace_state.to_header() == "k=v"
    assert process.attributes is not None and send.attributes is not None
    assert process.attributes["messaging.system"] == "kafka"
    assert process.attributes["messaging.destination.name"] == SUBMISSIONS
    assert process.attributes["messaging.consumer.group.name"] == "placement"
    assert process.attributes["messaging.kafka.message.key"] == "Placement/ns/p1"
    assert process.attributes["cloudevents.event_type"] == "placement.applied.v1"
    assert send.attributes["messaging.destination.name"] == "placement.decisions"
    assert send.status.status_code is StatusCode.UNSET

    sent = f"00-{TRACE_ID}-{send.context.span_id:016x}-01"
    record = decision(out)
    assert dict(record.headers)["traceparent"] == sent.encode()
    assert dict(record.headers)["tracestate"] == b"k=v"
    assert orjson.loads(record.value or b"")["traceparent"] == sent


def test_an_untraced_record_starts_a_trace_and_an_aborted_task_marks_its_send_span(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    runtime = Runtime([CountingEngine()])
    spans = tracing.start([placement("p1", "gpu")])
    out = [r for chunk in spans.watch(runtime.process_chunks(spans.inputs, T0)) for r in chunk.records]
    spans.committed([0])

    found = by_name(exporter.get_finished_spans())
    process, send = found[f"process {SUBMISSIONS}"], found["send placement.decisions"]
    assert process.parent is None
    assert send.status.status_code is StatusCode.ERROR
    assert process.context.trace_id == send.context.trace_id
    header = dict(decision(out).headers)["traceparent"].decode()
    assert header.split("-")[1:3] == [f"{send.context.trace_id:032x}", f"{send.context.span_id:016x}"]
