"""Cluster placement (OCM Placement) throughput and change latency: the engine alone, then through Kafka.

1. engine only: N placements over M clusters decided from cold through the pure Runtime (no I/O);
2. Kafka: inventory and the N placements pre-produced, a Processor started in this process, time until every
   placement's first decision is committed, as seen by a read_committed reader in another process (a deployer);
3. on two clusters, a typical one (the median number of decisions hold it) and the one most decisions hold:
   its label changed, then a NoSelect taint added. For each, the time from producing the change until the
   first and until every resulting decision is published (each task's decisions are committed as soon as
   they are decided), how many placements were re-decided versus how many decisions changed, and how many
   megabytes of records the change produced;
4. the Kafka share of the largest change: its records published again with the processor's own producer
   settings and sending code, without the engine;
5. peak RSS of this process.

Figures are printed, never asserted. Usage:
`python -m benchmarks.cluster_placement [--placements 10000] [--clusters 1000] [--namespaces 40] [--no-kafka]`
(uses $KAFKA_BOOTSTRAP_SERVERS when set, else starts a local broker)."""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from benchmarks.cluster_workload import Item, Workload
from benchmarks.support import kafka_broker, peak_rss_mib, print_figures
from benchmarks.tail import TopicTail
from engine.cluster import ClusterPlacementEngine
from engine.core import EngineSettings, SubjectEngine
from engine.registry import build_engines
from engine.runtime import InputRecord, OutputRecord, Runtime
from streams.kafka.admin import ensure_topics
from streams.kafka.tasks import TaskProducers, partition_of, send_records
from streams.memory import tune_garbage_collector
from streams.service import Processor
from streams.settings import KafkaSettings, Settings, TopicNames
from topics.names import TopicRole

__all__ = ["main"]


# --- helpers ---------------------------------------------------------------------------------------
def _cluster_engine(engines: list[SubjectEngine[Any]]) -> ClusterPlacementEngine:
    return next(e for e in engines if isinstance(e, ClusterPlacementEngine))


def _records(items: list[Item], start: int = 0) -> list[InputRecord]:
    return [
        InputRecord(topic=role, partition=0, offset=start + i, key=key.encode(), value=orjson.dumps(value))
        for i, (role, key, value) in enumerate(items)
    ]


def _decisions(outputs: list[OutputRecord]) -> dict[str, bytes]:
    """The last decision value per placement key among the outputs."""
    return {
        r.key.decode(): r.value
        for r in outputs
        if r.topic is TopicRole.DECISIONS and r.key is not None and r.value is not None
    }


def _clusters_of(value: bytes) -> frozenset[str]:
    data = orjson.loads(value)["data"]
    return frozenset(d["clusterName"] for p in data["placementDecisions"] for d in p["status"]["decisions"])


class _Tally:
    """Counts decided placements and how many decisions hold each cluster, without keeping the records."""

    def __init__(self) -> None:
        self.decided: dict[str, frozenset[str]] = {}

    def add(self, outputs: list[OutputRecord]) -> None:
        for key, value in _decisions(outputs).items():
            self.decided[key] = _clusters_of(value)

    def holders(self) -> Counter[str]:
        """How many decisions hold each cluster."""
        return Counter(chain.from_iterable(self.decided.values()))


def _targets(holders: Counter[str]) -> dict[str, str]:
    """The change targets: a typical cluster (the median number of decisions hold it) and the worst case (the
    cluster the most decisions hold)."""
    ranked = sorted(holders, key=lambda name: (holders[name], name))
    return {"typical": ranked[len(ranked) // 2], "most-held": ranked[-1]}


def _changes(workload: Workload, targets: dict[str, str], now: datetime) -> Iterator[tuple[str, str, Item]]:
    """(figure label, cluster, change): a label change and then a NoSelect taint on each target."""
    for which, name in targets.items():
        yield f"{which} {name}: label change", name, workload.relabelled(name)
        yield f"{which} {name}: NoSelect taint", name, workload.tainted(name, now)


# --- 1. engine only --------------------------------------------------------------------------------
def engine_only(workload: Workload) -> tuple[dict[str, float | str], dict[str, str], list[OutputRecord]]:
    tune_garbage_collector(Settings().gc_threshold)  # as the service runs
    engines = build_engines()
    cluster_engine = _cluster_engine(engines)
    runtime = Runtime(engines, EngineSettings())
    now = workload.now
    inventory = list(workload.inventory())
    started = time.perf_counter()
    for i in range(0, len(inventory), 1000):
        runtime.process(_records(inventory[i : i + 1000], i), now)
    loaded = time.perf_counter() - started
    placements = list(workload.placement_items())
    tally = _Tally()
    elapsed = 0.0
    for i in range(0, len(placements), 1000):  # the service's default batch size
        batch = _records(placements[i : i + 1000], i)
        started = time.perf_counter()
        outputs = runtime.process(batch, now)
        elapsed += time.perf_counter() - started
        tally.add(outputs)  # outside the timing: decoding the events is the consumer's cost
    del outputs, placements
    holders = tally.holders()
    targets = _targets(holders)
    figures: dict[str, float | str] = {
        "placements": workload.placements,
        "clusters": workload.clusters,
        "namespaces": workload.namespaces,
        "inventory records": len(inventory),
        "inventory load s": round(loaded, 3),
        "placements decided": len(tally.decided),
        "decide calls": cluster_engine.decide_calls,
        "cold decide total s": round(elapsed, 3),
        "placements/s": round(workload.placements / elapsed),
        "selected clusters (sum over placements)": sum(holders.values()),
    }
    offset = workload.placements
    heaviest: list[OutputRecord] = []
    for label, name, item in _changes(workload, targets, now):
        calls, published = cluster_engine.decide_calls, cluster_engine.published
        started = time.perf_counter()
        outputs = runtime.process(_records([item], offset), now)
        took = time.perf_counter() - started
        offset += 1
        figures[f"{label}: decisions holding it"] = holders[name]
        figures[f"{label}: re-decided"] = cluster_engine.decide_calls - calls
        figures[f"{label}: decisions changed"] = len(_decisions(outputs))
        figures[f"{label}: events published"] = cluster_engine.published - published
        figures[f"{label}: output MB"] = round(sum(len(r.value or b"") for r in outputs) / 1e6, 1)
        figures[f"{label}: engine s"] = round(took, 4)
        if len(outputs) > len(heaviest):
            heaviest = outputs
    figures["peak RSS MiB (after engine phase)"] = round(peak_rss_mib(), 1)
    return figures, targets, heaviest


# --- 2 and 3. through Kafka ------------------------------------------------------------------------
async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def _transfer_floor(settings: Settings, partitions: int, records: list[OutputRecord], tail: TopicTail) -> float:
    """Seconds to publish `records` again with the processor's own producer settings and sending code, in
    one transaction per task, until the reader has every decision: the Kafka share of a change, no engine."""
    producers = TaskProducers(settings.kafka.model_copy(update={"group_id": f"{settings.kafka.group_id}-floor"}))
    names = settings.topics
    by_task: dict[int, list[OutputRecord]] = {}
    for record in records:
        by_task.setdefault(partition_of(record.subject or "", partitions), []).append(record)
    expected = sum(1 for r in records if r.topic is TopicRole.DECISIONS and r.value is not None)
    try:
        for task in by_task:
            await producers.start(task)
        seen = len(tail.arrivals)
        started = time.monotonic()
        for task, batch in by_task.items():
            producer = producers.get(task)
            async with producer.transaction():
                await send_records(producer, batch, names.name, lambda subject: partition_of(subject, partitions))
        await _until(lambda: len(tail.arrivals) >= seen + expected, 60, "the re-published decisions")
        return max(at for at, _ in tail.arrivals[seen:]) - started
    finally:
        await producers.stop_all()


async def through_kafka(
    bootstrap: str, workload: Workload, targets: dict[str, str], heaviest: list[OutputRecord], compression: str
) -> dict[str, float | str]:
    run = uuid.uuid4().hex[:8]
    settings = Settings(
        kafka=KafkaSettings(
            bootstrap_servers=bootstrap, group_id=f"bench-{run}", task_partitions=3, compression_type=compression
        ),
        topics=TopicNames.prefixed(f"bench-{run}."),
        http_port=0,
    )
    names = settings.topics
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        counts = await ensure_topics(settings, admin)
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=262_144)
    await producer.start()

    async def send(items: list[Item]) -> None:
        futures = [
            await producer.send(names.name(role), orjson.dumps(value), key=key.encode()) for role, key, value in items
        ]
        await asyncio.gather(*futures)

    tail = TopicTail(bootstrap, names.decisions, counts[names.decisions])
    figures: dict[str, float | str] = {"compression": settings.kafka.compression_type}
    try:
        await send(list(workload.inventory()))
        started = time.monotonic()
        await send(list(workload.placement_items()))
        figures["produce placements s"] = round(time.monotonic() - started, 3)
        await tail.start()
        engines = build_engines()
        cluster_engine = _cluster_engine(engines)
        processor = Processor(settings, engines=engines)
        started = time.monotonic()
        task = asyncio.create_task(processor.run())
        await _until(lambda: processor.ready or task.done(), 120, "the processor to be ready")
        if task.done():
            task.result()
        figures["start -> ready s"] = round(time.monotonic() - started, 3)
        await _until(lambda: len(tail.keys) >= workload.placements, 300, "every placement's first decision")
        total = max(at for at, _ in tail.arrivals) - started
        figures["start -> all placements committed s"] = round(total, 3)
        figures["placements/s (incl. start)"] = round(workload.placements / total)
        figures["decision records"] = len(tail.arrivals)
        figures["transactions committed"] = processor.batches_done

        for label, _name, item in _changes(workload, targets, datetime.now(UTC)):
            await asyncio.sleep(0.5)  # quiet period: nothing in flight
            seen, done = len(tail.arrivals), processor.records_done
            calls, published = cluster_engine.decide_calls, cluster_engine.published
            started = time.monotonic()
            await send([item])
            await _until(lambda d=done: processor.records_done > d, 30, "the change to be processed")
            expected = cluster_engine.published - published
            await _until(lambda s=seen, e=expected: len(tail.arrivals) >= s + e, 30, "the re-decisions")
            new = tail.arrivals[seen:]
            last = max((at for at, _ in new), default=time.monotonic())
            first = min((at for at, _ in new), default=last)
            figures[f"{label}: re-decided"] = cluster_engine.decide_calls - calls
            figures[f"{label}: decisions changed"] = len({key for _, key in new})
            figures[f"{label}: produce -> first decision ms"] = round((first - started) * 1000, 1)
            figures[f"{label}: produce -> last decision ms"] = round((last - started) * 1000, 1)
        processor.request_stop()
        await asyncio.wait_for(task, 30)
        floor = await _transfer_floor(settings, counts[names.decisions], heaviest, tail)
        figures["largest change's records re-published without the engine: last decision ms"] = round(floor * 1000, 1)
    finally:
        await tail.stop()
        await producer.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--placements", type=int, default=10_000)
    parser.add_argument("--clusters", type=int, default=1_000)
    parser.add_argument("--namespaces", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-kafka", action="store_true", help="only the engine phase")
    parser.add_argument(
        "--compression",
        choices=("none", "gzip", "snappy", "lz4", "zstd"),
        default=KafkaSettings().compression_type,
        help="the processor's record batch codec (default: the service default)",
    )
    args = parser.parse_args()

    def workload() -> Workload:
        return Workload(args.placements, args.clusters, args.namespaces, datetime.now(UTC), seed=args.seed)

    figures, targets, heaviest = engine_only(workload())
    print_figures("cluster placement: engine only (pure Runtime, no I/O)", figures)
    if args.no_kafka:
        return

    async def run() -> dict[str, float | str]:
        with kafka_broker() as bootstrap:
            return await through_kafka(bootstrap, workload(), targets, heaviest, args.compression)

    kafka_figures = asyncio.run(run())
    kafka_figures["peak RSS MiB (whole run)"] = round(peak_rss_mib(), 1)
    print()
    print_figures("cluster placement: through Kafka (in-process processor, read_committed)", kafka_figures)


if __name__ == "__main__":
    main()
