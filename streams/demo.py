"""The quick-start demo: local broker, processor, two example advisors, example events, decisions shown.

Event times in examples/events.jsonl are moved to now, so the example toleration (20 s on cluster3's
maintenance taint) runs out during the demo and the placement is re-decided without cluster3.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from localbroker.testing import external_bootstrap, session_broker
from streams.service import Processor
from streams.settings import Settings, load_settings

__all__ = ["describe", "run_demo"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DEMO_SECONDS = 35.0


@contextlib.contextmanager
def _broker() -> Iterator[str]:
    data_dir = ROOT / ".cache" / "demo-broker"
    if not external_bootstrap():
        shutil.rmtree(data_dir, ignore_errors=True)
        print("== starting a local Apache Kafka broker (first run downloads it from Maven Central)", flush=True)
    with session_broker(data_dir) as bootstrap:
        yield bootstrap
    print("== broker stopped", flush=True)


def describe(value: dict[str, Any]) -> str:
    """One readable line for a decision-topic event."""
    kind, data = value["type"], value.get("data") or {}
    if kind.startswith("application.placed"):
        created = " (created)" if data["created"] else ""
        return f"app {data['applicationId']} -> {data['queue']}{created} by rule {data['rule']}"
    if kind.startswith("application.rejected"):
        return f"app {data['applicationId']} rejected: {data['reason']}"
    if kind.startswith("placement.decided"):
        clusters = [
            d["clusterName"] for page in data.get("placementDecisions", []) for d in page["status"]["decisions"]
        ]
        conditions = {c["type"]: c.get("reason", "") for c in data.get("conditions", [])}
        return (
            f"placement {data['namespace']}/{data['name']} -> {clusters or 'no clusters'}"
            f" scores={data.get('scores', {})} satisfied={conditions.get('PlacementSatisfied', '?')}"
        )
    if kind.startswith("placementrule.decided"):
        names = [d.get("name") for d in data.get("decisions", [])]
        return f"placement rule {data['namespace']}/{data['name']} -> {names} (round {data.get('round')})"
    if kind.startswith("candidates.proposed"):
        names = [c.get("name") for c in data.get("candidates", [])]
        return f"round {data['round']} of {data['rule']['name']}: asking {data['advisors']} about {names}"
    return f"{kind}: {orjson.dumps(data).decode()[:200]}"


async def _send_examples(bootstrap: str) -> int:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    sent = 0
    try:
        for line in (EXAMPLES / "events.jsonl").read_bytes().splitlines():
            item = orjson.loads(line)
            value = item["value"]
            value["time"] = now
            for taint in value.get("data", {}).get("taints", []) if isinstance(value.get("data"), dict) else []:
                taint["timeAdded"] = now
            await producer.send_and_wait(item["topic"], orjson.dumps(value), key=item["key"].encode())
            sent += 1
    finally:
        await producer.stop()
    return sent


async def _show(settings: Settings, seconds: float | None) -> None:
    consumer = AIOKafkaConsumer(
        settings.topics.decisions,
        settings.topics.advisor_requests,
        settings.topics.dead_letter,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    started = time.monotonic()
    try:
        while seconds is None or time.monotonic() - started < seconds:
            batches = await consumer.getmany(timeout_ms=500)
            for tp, records in batches.items():
                for record in records:
                    stamp = datetime.now(UTC).strftime("%H:%M:%S")
                    if record.value is None:
                        print(f"{stamp} [{tp.topic}] {record.key!r}: deleted", flush=True)
                        continue
                    try:
                        line = describe(orjson.loads(record.value))
                    except (orjson.JSONDecodeError, KeyError, TypeError):
                        line = f"undecodable value {record.value[:60]!r}"
                    print(f"{stamp} [{tp.topic}] {line}", flush=True)
    finally:
        await consumer.stop()


async def run_demo(*, keep_running: bool = False) -> int:
    """Run everything, print decisions as they are published, stop after DEMO_SECONDS (or on Ctrl-C)."""
    with _broker() as bootstrap:
        settings = load_settings(kafka={"bootstrap_servers": bootstrap}, queue_config=EXAMPLES / "queues.yaml")
        processor = Processor(settings)
        task = asyncio.create_task(processor.run())
        while not processor.ready:
            if task.done():
                task.result()
            await asyncio.sleep(0.1)
        print(
            f"== processor ready; metrics and probes on http://{settings.http_host}:{processor.http_port}", flush=True
        )
        python = sys.executable
        quiet = ["--log-level", "WARNING"]  # the demo shows the advisors' work through the topics
        advisors = [
            subprocess.Popen(
                [python, "-m", "advisors.cpu_priority", "--bootstrap", bootstrap, "--name", "cpu", *quiet]
            ),
            subprocess.Popen(
                [python, "-m", "advisors.veto", "--bootstrap", bootstrap, "--name", "veto", *quiet, "cluster4"]
            ),
        ]
        try:
            sent = await _send_examples(bootstrap)
            print(f"== sent {sent} example events from {EXAMPLES / 'events.jsonl'}; decisions follow", flush=True)
            print("== cluster3's maintenance taint is tolerated for 20 s; watch placement apps/web change", flush=True)
            await _show(settings, None if keep_running else DEMO_SECONDS)
        finally:
            for advisor in advisors:
                advisor.terminate()
            for advisor in advisors:
                advisor.wait(10)
            processor.request_stop()
            await asyncio.wait_for(task, settings.shutdown_timeout_seconds)
    return 0
