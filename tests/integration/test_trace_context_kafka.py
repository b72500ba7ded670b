"""One submission's trace context followed on a real Apache Kafka broker, from its record to the decision
record's header and CloudEvents extension, and through the consume, decide and commit spans (platform P16)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from kafka_support import KafkaWorld, running
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from test_cluster_placement_kafka import WEB, base_inventory, decided, inventory_has, placement

from streams.tracing import Tracing

pytestmark = pytest.mark.integration

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
DB = "Placement/apps/db"
ENVELOPE_TRACEPARENT = "00-11111111111111111111111111111111-2222222222222222-00"
CLUSTERS = {"c1": {}, "c2": {}}


async def submit(world: KafkaWorld, key: str, value: dict[str, Any], headers: list[tuple[str, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(world.topics.submissions, orjson.dumps(value), key=key.encode(), headers=headers)
    finally:
        await producer.stop()


def carried(records: list[Any], key: str) -> tuple[str | None, str | None, str | None]:
    """(traceparent header, tracestate header, traceparent extension) of the subject's last decision."""
    record, value = decided(records, key)[-1]
    headers = {name: data.decode() for name, data in record.headers}
    assert value is not None
    return headers.get("traceparent"), headers.get("tracestate"), value.get("traceparent")


def until_decided(*keys: str) -> Any:
    return lambda records: all(decided(records, key) for key in keys)


async def test_a_decision_carries_its_submissions_trace_context(world: KafkaWorld) -> None:
    async with running(world.settings()) as processor:
        await world.produce(base_inventory(world, CLUSTERS))
        await inventory_has(processor, list(CLUSTERS))
        await submit(world, WEB, placement("web", {}), [("traceparent", TRACEPARENT.encode()), ("tracestate", b"t=1")])
        with_extension = {**placement("db", {}), "traceparent": ENVELOPE_TRACEPARENT}
        await submit(world, DB, with_extension, [])
        records = await world.collect(world.topics.decisions, until_decided(WEB, DB))
    assert carried(records, WEB) == (TRACEPARENT, "t=1", TRACEPARENT)
    assert carried(records, DB) == (ENVELOPE_TRACEPARENT, None, ENVELOPE_TRACEPARENT)


async def test_spans_link_the_submission_to_its_decision(world: KafkaWorld) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider, group=world.group, decisions_topic=world.topics.decisions)
    async with running(world.settings(), tracing=tracing) as processor:
        await world.produce(base_inventory(world, CLUSTERS))
        await inventory_has(processor, list(CLUSTERS))
        await submit(world, WEB, placement("web", {}), [("traceparent", TRACEPARENT.encode())])
        records = await world.collect(world.topics.decisions, until_decided(WEB))

    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == int(TRACE_ID, 16)]
    [process] = [s for s in spans if s.kind is SpanKind.CONSUMER]
    [decide] = [s for s in spans if s.kind is SpanKind.INTERNAL]
    [send] = [s for s in spans if s.kind is SpanKind.PRODUCER]
    assert process.name == f"process {world.topics.submissions}"
    assert process.parent is not None and process.parent.span_id == int(PARENT_ID, 16)
    assert decide.parent is not None and decide.parent.span_id == process.context.span_id
    assert send.parent is not None and send.parent.span_id == decide.context.span_id
    assert process.attributes is not None and send.attributes is not None
    assert process.attributes["messaging.kafka.message.key"] == WEB
    assert send.attributes["messaging.destination.name"] == world.topics.decisions
    sent = f"00-{TRACE_ID}-{send.context.span_id:016x}-01"
    header, _, extension = carried(records, WEB)
    assert header == extension == sent
