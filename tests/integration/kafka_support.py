"""Helpers for real-broker tests: isolated topic names per test, an in-process processor, produce/consume."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from localbroker.procs import free_ports
from streams.http import http_get as streams_http_get
from streams.replay import Replayer
from streams.service import Processor
from streams.settings import KafkaSettings, Settings, TopicNames
from streams.tracing import Tracing

Record = ConsumerRecord[bytes, bytes]


def free_port() -> int:
    """A loopback port nobody listens on now, for a processor's HTTP endpoint (``processor.http_port``)."""
    return free_ports(1)[0]


@asynccontextmanager
async def admin_client(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of the broker at `bootstrap`, closed on leaving."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


class KafkaWorld:
    """One test's private topics and group, with produce/collect helpers."""

    def __init__(self, bootstrap: str, partitions: int = 2) -> None:
        self.bootstrap = bootstrap
        self.run_id = uuid.uuid4().hex[:10]
        self.topics = TopicNames.prefixed(f"t{self.run_id}.")
        self.partitions = partitions
        self.group = f"placement-{self.run_id}"

    def example_topics(self) -> dict[str, str]:
        """The examples' default topic names -> this world's."""
        topics = self.topics
        return {
            "placement.submissions": topics.submissions,
            "placement.cluster-status": topics.cluster_status,
            "placement.taints": topics.taints,
        }

    def settings(self, **overrides: Any) -> Settings:
        kafka = KafkaSettings(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            task_partitions=self.partitions,
            session_timeout_ms=6000,
            **overrides.pop("kafka", {}),
        )
        overrides.setdefault("http_port", free_port())
        return Settings(kafka=kafka, topics=self.topics, **overrides)

    def env(self, **extra: str) -> dict[str, str]:
        """The same settings as environment variables, for a processor in a subprocess."""
        return {**self.settings(http_port=0).environment(), **extra}

    async def produce(self, items: Sequence[tuple[str, str | None, Any]]) -> None:
        """Send (topic, key, value) items; dict values are JSON-encoded, bytes are sent as they are."""
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        await producer.start()
        try:
            for topic, key, value in items:
                body = value if isinstance(value, bytes) or value is None else orjson.dumps(value)
                await producer.send_and_wait(topic, body, key=None if key is None else key.encode())
        finally:
            await producer.stop()

    async def committed_offsets(self, topic: str) -> dict[int, int]:
        """The group's committed offset per partition of `topic` (absent partitions: none committed)."""
        async with admin_client(self.bootstrap) as admin:
            offsets = await admin.list_consumer_group_offsets(self.group)
        return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic and meta.offset >= 0}

    async def group_state(self) -> tuple[str, int]:
        """The consumer group's state (e.g. ``Empty``, ``Stable``) and its number of members."""
        async with admin_client(self.bootstrap) as admin:
            response = (await admin.describe_consumer_groups([self.group]))[0]
        group = response.groups[0]
        return group[2], len(group[5])

    async def end_offsets(
        self, topic: str, partitions: int | None = None, *, isolation: str = "read_uncommitted"
    ) -> dict[int, int]:
        """Each partition's end (of `partitions`, else the world's count): its high watermark, or read_committed
        its last stable offset, which an open transaction holds back."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False, isolation_level=isolation
        )
        await consumer.start()
        try:
            await asyncio.sleep(0)  # aiokafka: a consumer stopped before its first loop turn raises CancelledError
            wanted = [TopicPartition(topic, p) for p in range(self.partitions if partitions is None else partitions)]
            return {tp.partition: offset for tp, offset in (await consumer.end_offsets(wanted)).items()}
        finally:
            await consumer.stop()

    def _reader(self, *topics: str) -> AIOKafkaConsumer:
        """A consumer of `topics` from their beginning, read_committed, in no group."""
        return AIOKafkaConsumer(
            *topics,
            bootstrap_servers=self.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            enable_auto_commit=False,
        )

    async def read_to_end(self, topics: Sequence[str]) -> list[Record]:
        """Every record of the topics as of now, each partition read to its end."""
        consumer = self._reader(*topics)
        await consumer.start()
        records: list[Record] = []
        try:
            while not consumer.assignment():
                await asyncio.sleep(0.05)
            ends = await consumer.end_offsets(list(consumer.assignment()))
            while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
                for chunk in (await consumer.getmany(timeout_ms=200)).values():
                    records.extend(chunk)
        finally:
            await consumer.stop()
        return records

    async def collect(self, topic: str, until: Callable[[list[Record]], bool], timeout: float = 45.0) -> list[Record]:
        """Read `topic` from the beginning (read_committed) until `until(records)` holds."""
        consumer = self._reader(topic)
        await consumer.start()
        records: list[Record] = []
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not until(records):
                if loop.time() > deadline:
                    raise AssertionError(f"timed out on {topic}; got {[_brief(r) for r in records]}")
                batch = await consumer.getmany(timeout_ms=200)
                for chunk in batch.values():
                    records.extend(chunk)
        finally:
            await consumer.stop()
        return records


def _brief(record: Record) -> Any:
    value = None
    if record.value is not None:
        try:
            loaded = orjson.loads(record.value)
            value = loaded.get("type") if isinstance(loaded, dict) else loaded
        except orjson.JSONDecodeError:
            value = record.value[:40]
    return (record.key, value)


def values(records: Sequence[Record], event_type: str | None = None) -> list[dict[str, Any]]:
    """Decoded event values, optionally only of one type."""
    found = [orjson.loads(r.value) for r in records if r.value is not None]
    return [v for v in found if event_type is None or v["type"] == event_type]


@asynccontextmanager
async def running(settings: Settings, tracing: Tracing | None = None) -> AsyncIterator[Processor]:
    """A processor running in this event loop until the block ends (graceful stop)."""
    processor = Processor(settings, tracing=tracing)
    task = asyncio.create_task(processor.run())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not processor.ready:
            if task.done():
                task.result()
            if loop.time() > deadline:
                raise AssertionError("processor did not become ready in 60 s")
            await asyncio.sleep(0.05)
        yield processor
    finally:
        processor.request_stop()
        await asyncio.wait_for(task, 30)


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> None:
    """Poll until `predicate()` holds; fail the test after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


async def http_get(url: str) -> tuple[int, str]:
    """Status and body of a GET (0 and "" while nothing listens yet)."""

    try:
        status, body = await asyncio.to_thread(streams_http_get, url, 5)
    except OSError:
        return 0, ""
    return status, body.decode()


def event(kind: str, data: Any, event_id: str | None = None, time: str | None = None) -> dict[str, Any]:
    """A CloudEvent value."""
    value = {
        "specversion": "1.0",
        "id": event_id or uuid.uuid4().hex,
        "source": "/tests",
        "type": f"{kind}.v1",
        "datacontenttype": "application/json",
        "data": data,
    }
    if time is not None:
        value["time"] = time
    return value


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


VOLATILE = {"id", "time", "evaluationTime", "lastTransitionTime", "lastUpdateTime"}


def without(value: Any, fields: frozenset[str] | set[str]) -> Any:
    """`value` with the keys `fields` names left out, at every depth."""
    if isinstance(value, dict):
        return {k: without(v, fields) for k, v in value.items() if k not in fields}
    if isinstance(value, list):
        return [without(v, fields) for v in value]
    return value


def stable(value: Any) -> Any:
    """A value without the fields that carry wall-clock instants or random ids."""
    return without(value, VOLATILE)


def parity_inputs() -> tuple[list[tuple[str, str, dict[str, Any]]], list[bytes]]:
    """The examples' events as (topic, key, value), timed now, without advisors (a rule decides without waiting)
    or taint times; and the decisions `replay` publishes for them, as sorted stable JSON (`published_decisions`)."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    lines: list[tuple[str, str, dict[str, Any]]] = []
    for raw in (EXAMPLES / "events.jsonl").read_text().splitlines():
        item = orjson.loads(raw)
        if item["topic"] == "placement.submissions" and item["key"].startswith("PlacementRule/"):
            item["value"]["data"]["spec"].pop("advisors")
        if item["topic"] == "placement.taints":
            item["value"]["data"]["taints"][0].pop("timeAdded")
        item["value"]["time"] = now
        lines.append((item["topic"], item["key"], item["value"]))
    out = io.BytesIO()
    replayer = Replayer(Settings(), out, queue_config=EXAMPLES / "queues.yaml")  # the default topic names
    replayer.run(orjson.dumps({"topic": t, "key": k, "value": v}) for t, k, v in lines)
    replayed = [orjson.loads(line) for line in out.getvalue().splitlines()]
    expected = [
        (r["key"], stable(r["value"]))
        for r in replayed
        if r["topic"] == "placement.decisions" and r["value"] is not None
    ]
    assert {e[1]["type"] for e in expected} >= {
        "placement.decided.v1",
        "application.placed.v1",
        "placementrule.decided.v1",
    }
    return lines, sorted(map(orjson.dumps, expected))


def published_decisions(records: list[Record]) -> list[bytes]:
    """Decision records as sorted stable JSON, to compare with `parity_inputs`'s."""
    published = [(r.key.decode(), stable(orjson.loads(r.value))) for r in records if r.value is not None]
    return sorted(map(orjson.dumps, published))
