"""The hostile corpus produced to a real broker while `placement-stream run` (a child process) consumes it and a
probe asks `/healthz` every 100 ms: every bad record reaches the dead-letter topic exactly once with stage and
reason headers, the good records are decided right, and the process stays alive and answers within a second.

The processor runs with an address-space cap, so a runaway expression that builds gigabytes fails inside it
rather than on the machine. Waiting is bounded: a processor that hangs or dies fails the checks at the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord

from streams.http import http_get
from tests.faults.hostile_corpus import (
    BROKER_MESSAGE_LIMIT,
    CLASSES,
    AppDecision,
    HostileRecord,
    PlacementDecision,
    build_corpus,
    letter_problem,
    summarise,
)
from tests.integration.kafka_support import KafkaWorld, free_port
from topics.names import TOPIC_SPECS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
QUEUES = Path(__file__).with_name("hostile_queues.yaml")
HEALTH_EVERY_SECONDS = 0.1
HEALTH_BUDGET_SECONDS = 1.0
OUTCOME_DEADLINE_SECONDS = 90.0
"""From the first record produced to the last outcome seen; the whole test stays near two minutes."""
SETTLE_SECONDS = 3.0
"""Kept reading after every outcome arrived, so a second dead letter of the same record would be seen."""
MEMORY_LIMIT_BYTES = 3 * 1024**3
_DLQ = "__connect.errors."
_LAUNCH = (
    "import resource, runpy; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT_BYTES}, {MEMORY_LIMIT_BYTES})); "
    "runpy.run_module('streams', run_name='__main__', alter_sys=True)"
)
COMPACTED = frozenset(role for role, spec in TOPIC_SPECS.items() if spec.cleanup_policy == "compact")
Record = ConsumerRecord[bytes, bytes]
Coordinates = tuple[str, int, int]


@dataclass
class KafkaRun:
    """What one run of the processor over the corpus left behind."""

    coordinates: dict[int, Coordinates] = field(default_factory=dict)
    """Corpus index -> where the record was written (topic, partition, offset)."""
    refused: dict[int, str] = field(default_factory=dict)
    """Corpus index -> why the broker would not take the record."""
    letters: dict[Coordinates, list[Record]] = field(default_factory=lambda: defaultdict(list))
    placements: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Subject key -> data of its last placement.decided."""
    applications: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Application id -> its last application.placed or .rejected event."""
    health: list[tuple[float, int]] = field(default_factory=list)
    """(seconds the answer took, HTTP status or 0 when none came) per probe."""
    alive_at_end: bool = False
    exit_code: int | None = None
    log_tail: str = ""
    finished_in: float = 0.0


def _headers(record: Record) -> dict[str, str]:
    return {name: value.decode(errors="replace") for name, value in record.headers}


def _absorb(run: KafkaRun, records: list[Record], dead_letter_topic: str) -> None:
    for record in records:
        if record.topic == dead_letter_topic:
            headers = _headers(record)
            where = (headers.get(_DLQ + "topic", ""), int(headers.get(_DLQ + "partition", -1)))
            run.letters[(*where, int(headers.get(_DLQ + "offset", -1)))].append(record)
            continue
        if record.value is None:
            continue
        value = orjson.loads(record.value)
        data = value.get("data") or {}
        if value.get("type") == "placement.decided.v1":
            run.placements[(record.key or b"").decode(errors="replace")] = data
        elif value.get("type") in ("application.placed.v1", "application.rejected.v1"):
            run.applications[data["applicationId"]] = value


def _satisfied(run: KafkaRun, corpus: list[HostileRecord]) -> bool:
    """Every bad record has a dead letter and every good check has a decision (right or wrong)."""
    for record in corpus:
        if record.index in run.refused:
            continue
        if record.bad and not run.letters.get(run.coordinates[record.index]):
            return False
        check = record.check
        if record.bad or check is None:
            continue
        if isinstance(check, PlacementDecision) and check.subject not in run.placements:
            return False
        if isinstance(check, AppDecision) and check.application_id not in run.applications:
            return False
    return True


async def _probe_health(url: str, samples: list[tuple[float, int]], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        started = loop.time()
        try:
            status, _ = await asyncio.to_thread(http_get, url, 10.0)
        except OSError:
            status = 0
        samples.append((loop.time() - started, status))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), HEALTH_EVERY_SECONDS)


async def _wait_ready(port: int, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert child.poll() is None, f"the processor exited with {child.returncode} before it was ready"
        with contextlib.suppress(OSError):
            status, _ = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/readyz", 2.0)
            if status == 200:
                return
        await asyncio.sleep(0.2)
    raise AssertionError("the processor was not ready within 60 s")


async def _produce(world: KafkaWorld, corpus: list[HostileRecord], run: KafkaRun) -> None:
    """Baseline first (acknowledged before the rest), then the body in corpus order. Records too large for the
    broker's 1 MiB limit go compressed, as a producer would send them; all others go as they are."""
    names = {role: world.topics.name(role) for role in {r.topic for r in corpus}}
    plain = AIOKafkaProducer(bootstrap_servers=world.bootstrap, acks="all", linger_ms=5)
    packed = AIOKafkaProducer(
        bootstrap_servers=world.bootstrap, acks="all", compression_type="gzip", max_request_size=8 * 1024 * 1024
    )
    await plain.start()
    await packed.start()
    try:
        for part in ([r for r in corpus if r.baseline], [r for r in corpus if not r.baseline]):
            pending = []
            for record in part:
                size = len(record.key or b"") + len(record.value or b"")
                producer = packed if size > BROKER_MESSAGE_LIMIT - 4096 else plain
                future = await producer.send(names[record.topic], record.value, key=record.key)
                pending.append((record.index, future))
            results = await asyncio.gather(*(future for _, future in pending), return_exceptions=True)
            for (index, _), meta in zip(pending, results, strict=True):
                if isinstance(meta, BaseException):
                    run.refused[index] = f"{type(meta).__name__}: {meta}"
                else:
                    run.coordinates[index] = (meta.topic, meta.partition, meta.offset)
    finally:
        await plain.stop()
        await packed.stop()


@contextlib.asynccontextmanager
async def _processor(world: KafkaWorld, port: int, log_path: Path) -> AsyncIterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        **world.env(),
        "PLACEMENT_HTTP_PORT": str(port),
        "PLACEMENT_QUEUE_CONFIG": str(QUEUES),
        "PLACEMENT_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
        "OPENBLAS_NUM_THREADS": "1",
    }
    with log_path.open("wb") as log:
        child = subprocess.Popen([sys.executable, "-c", _LAUNCH, "run"], env=env, cwd=log_path.parent, stderr=log)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(child.wait, 25)
            except subprocess.TimeoutExpired:
                child.kill()
                await asyncio.to_thread(child.wait)


async def run_corpus(world: KafkaWorld, corpus: list[HostileRecord], log_path: Path) -> KafkaRun:
    """Start the processor, produce the corpus, read decisions and dead letters until all are in (bounded)."""
    run = KafkaRun()
    port = free_port()
    stop = asyncio.Event()
    async with _processor(world, port, log_path) as child:
        await _wait_ready(port, child)
        probe = asyncio.create_task(_probe_health(f"http://127.0.0.1:{port}/healthz", run.health, stop))
        reader = AIOKafkaConsumer(
            world.topics.decisions,
            world.topics.dead_letter,
            bootstrap_servers=world.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            enable_auto_commit=False,
            max_partition_fetch_bytes=32 * 1024 * 1024,
            fetch_max_bytes=64 * 1024 * 1024,
        )
        await reader.start()
        try:
            started = time.monotonic()
            await _produce(world, corpus, run)
            settled_at: float | None = None
            while time.monotonic() - started < OUTCOME_DEADLINE_SECONDS and child.poll() is None:
                batch = await reader.getmany(timeout_ms=200)
                for chunk in batch.values():
                    _absorb(run, chunk, world.topics.dead_letter)
                if settled_at is None and _satisfied(run, corpus):
                    settled_at = time.monotonic()
                    run.finished_in = settled_at - started
                if settled_at is not None and time.monotonic() - settled_at > SETTLE_SECONDS:
                    break
            run.alive_at_end = child.poll() is None
        finally:
            stop.set()
            await probe
            await reader.stop()
    run.exit_code = child.returncode
    run.log_tail = log_path.read_text(errors="replace")[-3000:]
    return run


def verdict(record: HostileRecord, run: KafkaRun) -> str | None:
    """Why the record's outcome on Kafka is wrong, or None when it is right."""
    if record.index in run.refused:
        return f"the broker refused the record: {run.refused[record.index][:200]}"
    letters = run.letters.get(run.coordinates[record.index], [])
    if record.bad:
        if not letters:
            return "no dead letter"
        if len(letters) > 1:
            return f"dead-lettered {len(letters)} times"
        headers = _headers(letters[0])
        if headers.get(_DLQ + "exception.message") is None:
            return "the dead letter has no exception.message header"
        return letter_problem(record, headers.get(_DLQ + "stage"), headers[_DLQ + "exception.message"])
    if letters:
        headers = _headers(letters[0])
        return f"dead-lettered at {headers.get(_DLQ + 'stage')}: {headers.get(_DLQ + 'exception.message', '')[:300]}"
    check = record.check
    if isinstance(check, PlacementDecision):
        data = run.placements.get(check.subject)
        if data is None:
            return "no placement.decided for the placement"
        pages = data.get("placementDecisions", [])
        clusters = {d["clusterName"] for page in pages for d in page["status"]["decisions"]}
        if data.get("deleted"):
            return "decided as deleted"
        if check.clusters is not None and clusters != check.clusters:
            return f"selected {sorted(clusters)}, expected {sorted(check.clusters)}"
    elif isinstance(check, AppDecision):
        value = run.applications.get(check.application_id)
        if value is None:
            return "no application.placed or application.rejected for the application"
        placed = value["type"] == "application.placed.v1"
        if check.queue is None and placed:
            return f"placed in {value['data']['queue']}, expected a rejection"
        if check.queue is not None and (not placed or value["data"]["queue"] != check.queue):
            got = value["data"].get("queue") or value["data"].get("reason")
            return f"expected {check.queue}, got {value['type']} {got!r}"
    return None


@pytest.fixture(scope="module")
def corpus() -> list[HostileRecord]:
    """All of it but keyless records for compacted topics, which the broker itself refuses (no processor sees
    them; the replay test keeps them)."""
    return [r for r in build_corpus() if r.key is not None or r.topic not in COMPACTED]


@pytest.fixture(scope="module")
async def kafka_run(
    kafka_bootstrap: str, corpus: list[HostileRecord], tmp_path_factory: pytest.TempPathFactory
) -> KafkaRun:
    world = KafkaWorld(kafka_bootstrap, partitions=2)
    return await run_corpus(world, corpus, tmp_path_factory.mktemp("hostile") / "processor.log")


@pytest.mark.parametrize("kind", list(CLASSES))
def test_each_record_of_the_class_gets_its_outcome(corpus: list[HostileRecord], kafka_run: KafkaRun, kind: str) -> None:
    records = [r for r in corpus if r.kind == kind]
    failures = [(r, problem) for r in records if (problem := verdict(r, kafka_run)) is not None]
    assert not failures, summarise(failures, len(records)) + f"\nprocessor log tail:\n{kafka_run.log_tail[-800:]}"


def test_no_dead_letter_for_records_that_were_not_sent(corpus: list[HostileRecord], kafka_run: KafkaRun) -> None:
    sent = set(kafka_run.coordinates.values())
    strays = [where for where in kafka_run.letters if where not in sent]
    assert not strays, f"dead letters naming records that were never produced: {strays[:5]}"


def test_the_processor_stays_alive_and_answers_healthz_within_a_second(kafka_run: KafkaRun) -> None:
    slowest = max((seconds for seconds, _ in kafka_run.health), default=0.0)
    print(
        f"longest /healthz stall: {slowest:.3f} s over {len(kafka_run.health)} probes; "
        f"all outcomes in after {kafka_run.finished_in:.1f} s"
    )
    assert kafka_run.alive_at_end, f"the processor died (exit {kafka_run.exit_code}):\n{kafka_run.log_tail}"
    failed = [status for _, status in kafka_run.health if status != 200]
    assert not failed, f"{len(failed)} of {len(kafka_run.health)} /healthz probes failed (statuses {set(failed)})"
    late = sorted((seconds for seconds, _ in kafka_run.health if seconds > HEALTH_BUDGET_SECONDS), reverse=True)
    assert not late, f"{len(late)} /healthz answers took over {HEALTH_BUDGET_SECONDS} s, the longest {late[0]:.1f} s"
    assert len(kafka_run.health) >= 10
    assert kafka_run.exit_code == 0, f"SIGTERM did not stop the processor cleanly:\n{kafka_run.log_tail}"


def test_every_outcome_arrived_within_the_deadline(corpus: list[HostileRecord], kafka_run: KafkaRun) -> None:
    assert _satisfied(kafka_run, corpus), f"outcomes still missing after {OUTCOME_DEADLINE_SECONDS:.0f} s"
