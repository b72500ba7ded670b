"""Cluster placement (OCM Placement) throughput and change latency: the engine alone, then through Kafka.

1. engine only: N placements over M clusters decided from cold through the pure Runtime (no I/O);
2. Kafka, once per instance count (default 1, then 2: one per core on the benchmark machine): inventory and
   the N placements pre-produced, then that many `placement-stream run` processes started in one consumer
   group; the time until every instance is ready and until every placement's first decision is committed, as
   seen by a read_committed reader in another process (a deployer);
3. on two clusters, a typical one (the median number of decisions hold it) and the one most decisions hold:
   its label changed, then a NoSelect taint added. For each, the time from producing the change until the
   first and until every resulting decision is published (each task's decisions are committed as soon as
   they are decided), how many placements were re-decided (engine phase: also how many decisions held the
   cluster) versus how many decisions changed, and how many megabytes of records the change produced. The
   instances are watched through their /metrics endpoint, as an operator would;
4. the Kafka share of the largest change: its records published again with the processor's own producer
   settings and sending code, without the engine;
5. peak RSS: of the engine phase, and of each instance (VmHWM).
6. with `--restart`: the instances stopped after the cold start and as many new ones started on the same group;
   the time until every new one is ready (tables read, tasks restored from their changelogs), how much of it
   reading the tables and restoring the tasks took (from the instances' /metrics), and until a Placement
   submitted then is decided (the restored ones are re-decided meanwhile).

Figures are printed, never asserted. Usage: `python -m benchmarks.cluster_placement --help` (uses
$KAFKA_BOOTSTRAP_SERVERS when set, else starts a local broker)."""

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

from benchmarks.cluster_workload import Item, Workload
from benchmarks.instances import InstanceGroup, Samples, sample, sum_samples
from benchmarks.support import kafka_broker, peak_rss_mib, print_figures, wait_until
from benchmarks.tail import TopicTail
from engine.cluster import ClusterPlacementEngine
from engine.core import EngineSettings, SubjectEngine
from engine.registry import build_engines
from engine.runtime import InputRecord, OutputRecord, Runtime
from streams.kafka.admin import create_topics
from streams.kafka.tasks import TaskProducers, partition_of, send_records
from streams.settings import KafkaSettings, Settings, TopicNames
from streams.tuning import tune_garbage_collector
from topics.names import TopicRole

__all__ = ["contract_bytes", "decided_bytes", "engine_only", "main", "published_bytes", "through_kafka"]


# --- helpers ---------------------------------------------------------------------------------------
def _cluster_engine(engines: list[SubjectEngine[Any]]) -> ClusterPlacementEngine:
    return next(e for e in engines if isinstance(e, ClusterPlacementEngine))


def _renamed(item: Item, name: str) -> Item:
    """A Placement item under another name (same namespace and spec)."""
    role, _, value = item
    metadata = {**value["data"]["metadata"], "name": name}
    renamed = {**value, "data": {**value["data"], "metadata": metadata}}
    return role, f"Placement/{metadata['namespace']}/{name}", renamed


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


def decided_bytes(outputs: list[OutputRecord]) -> int:
    """The least the changed decisions among `outputs` need: per decision its key and its clusters' names as a
    JSON list. What a change publishes is judged against it."""
    return sum(len(key) + len(orjson.dumps(sorted(_clusters_of(value)))) for key, value in _decisions(outputs).items())


def contract_bytes(outputs: list[OutputRecord]) -> int:
    """The least the event contract lets the changed decisions among `outputs` take: per decision its key, its
    pages in upstream's PlacementDecision shape (K1: every selected cluster as `{clusterName, reason}`) and the
    selected clusters' scores (K3), with no envelope, status or changelog."""
    total = 0
    for key, value in _decisions(outputs).items():
        data = orjson.loads(value)["data"]
        total += len(key) + len(orjson.dumps(data["placementDecisions"])) + len(orjson.dumps(data["scores"]))
    return total


def published_bytes(outputs: list[OutputRecord]) -> int:
    """Keys and values of every record a change publishes (decisions and changelog)."""
    return sum(len(r.key or b"") + len(r.value or b"") for r in outputs)


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
    elapsed = cpu = 0.0
    for i in range(0, len(placements), 1000):  # the service's default batch size
        batch = _records(placements[i : i + 1000], i)
        started, cpu_started = time.perf_counter(), time.process_time()
        outputs = runtime.process(batch, now)
        elapsed += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
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
        "cold decide CPU s": round(cpu, 3),
        "placements/s": round(workload.placements / elapsed),
        "selected clusters (sum over placements)": sum(holders.values()),
    }
    offset = workload.placements
    heaviest: list[OutputRecord] = []
    for label, name, item in _changes(workload, targets, now):
        calls, published = cluster_engine.decide_calls, cluster_engine.published
        started, cpu_started = time.perf_counter(), time.process_time()
        outputs = runtime.process(_records([item], offset), now)
        took, took_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        offset += 1
        figures[f"{label}: decisions holding it"] = holders[name]
        figures[f"{label}: re-decided"] = cluster_engine.decide_calls - calls
        figures[f"{label}: decisions changed"] = len(_decisions(outputs))
        figures[f"{label}: events published"] = cluster_engine.published - published
        figures[f"{label}: output MB"] = round(sum(len(r.value or b"") for r in outputs) / 1e6, 1)
        figures[f"{label}: published bytes (keys and values)"] = published_bytes(outputs)
        figures[f"{label}: decided-cluster bytes (keys and names)"] = decided_bytes(outputs)
        figures[f"{label}: contract bytes (keys, pages, scores)"] = contract_bytes(outputs)
        figures[f"{label}: changelog bytes (keys and values)"] = published_bytes(
            [r for r in outputs if r.topic is TopicRole.CHANGELOG]
        )
        figures[f"{label}: engine s"] = round(took, 4)
        figures[f"{label}: engine CPU s"] = round(took_cpu, 4)
        if len(outputs) > len(heaviest):
            heaviest = outputs
    figures["peak RSS MiB (after engine phase)"] = round(peak_rss_mib(), 1)
    return figures, targets, heaviest


# --- 2 and 3. through Kafka ------------------------------------------------------------------------
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
        await wait_until(lambda: len(tail.arrivals) >= seen + expected, 60, "the re-published decisions")
        return max(at for at, _ in tail.arrivals[seen:]) - started
    finally:
        await producers.stop_all()


async def through_kafka(
    bootstrap: str,
    workload: Workload,
    targets: dict[str, str] | None,
    heaviest: list[OutputRecord] | None,
    *,
    compression: str,
    instances: int,
    task_partitions: int,
    restart: bool = False,
) -> dict[str, float | str]:
    """The Kafka phases. Without `targets` no change is made, without `heaviest` the transfer floor is not
    measured; with `restart` the group is stopped after the cold start and a new group of as many instances is
    started on it, and the time until every new instance is ready (tables read, tasks restored) is a figure."""
    run = uuid.uuid4().hex[:8]
    settings = Settings(
        kafka=KafkaSettings(
            bootstrap_servers=bootstrap,
            group_id=f"bench-{run}",
            task_partitions=task_partitions,
            compression_type=compression,
        ),
        topics=TopicNames.prefixed(f"bench-{run}."),
        http_port=0,
        metrics_max_age_ms=0,  # the counts before and after each change are read fresh
    )
    names = settings.topics
    counts = await create_topics(settings)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=262_144)
    await producer.start()

    async def send(items: list[Item]) -> None:
        futures = [
            await producer.send(names.name(role), orjson.dumps(value), key=key.encode()) for role, key, value in items
        ]
        await asyncio.gather(*futures)

    tail = TopicTail(bootstrap, names.decisions, counts[names.decisions])
    group = InstanceGroup(settings, instances)
    figures: dict[str, float | str] = {
        "instances": instances,
        "task partitions": task_partitions,
        "compression": settings.kafka.compression_type,
    }
    decisions = names.decisions
    try:
        await send(list(workload.inventory()))
        started = time.monotonic()
        await send(list(workload.placement_items()))
        figures["produce placements s"] = round(time.monotonic() - started, 3)
        await tail.start()
        started = time.monotonic()
        await group.start()
        await wait_until(group.ready, 120, "every instance to be ready", interval=0.05)
        figures["start -> every instance ready s"] = round(time.monotonic() - started, 3)
        cold_timeout = 300 + workload.placements / 100  # a figure for the slow cases too, not a failure
        await wait_until(
            lambda: len(tail.keys) >= workload.placements, cold_timeout, "every placement's first decision"
        )
        total = max(at for at, _ in tail.arrivals) - started
        figures["start -> all placements committed s"] = round(total, 3)
        figures["placements/s (incl. start)"] = round(workload.placements / total)
        figures["decision records"] = len(tail.arrivals)
        members = await group.samples()
        figures["transactions committed"] = sum_samples(members, "placement_transactions_total", outcome="committed")

        for label, _name, (role, key, value) in _changes(workload, targets or {}, datetime.now(UTC)):
            await asyncio.sleep(0.5)  # quiet period: nothing in flight
            topic = names.name(role)
            before = await group.samples()
            seen = len(tail.arrivals)
            started = time.monotonic()
            await send([(role, key, value)])

            async def committed(topic: str = topic, before: list[Samples] = before) -> bool:
                """Every instance has processed the change (a global table record) and committed its outputs."""
                now = await group.samples()
                done = [sample(m, "placement_records_processed_total", topic=topic) for m in (*now, *before)]
                return all(a > b for a, b in zip(done[: len(now)], done[len(now) :], strict=True))

            # each ask costs the instances an HTTP request, so seldom: the figures come from the reader's arrivals
            await wait_until(committed, 30, "the change to be processed", interval=0.1)
            after = await group.samples()
            published = sum_samples(after, "placement_records_produced_total", topic=decisions) - sum_samples(
                before, "placement_records_produced_total", topic=decisions
            )
            await wait_until(lambda s=seen, p=published: len(tail.arrivals) >= s + p, 30, "the re-decisions")
            new = tail.arrivals[seen:]
            last = max((at for at, _ in new), default=time.monotonic())
            first = min((at for at, _ in new), default=last)
            decided = "placement_subjects_decided_total"
            figures[f"{label}: re-decided"] = sum_samples(after, decided) - sum_samples(before, decided)
            figures[f"{label}: decisions changed"] = len({key for _, key in new})
            figures[f"{label}: produce -> first decision ms"] = round((first - started) * 1000, 1)
            figures[f"{label}: produce -> last decision ms"] = round((last - started) * 1000, 1)
        peaks = [member.peak_rss_mib() for member in group.members]
        figures["peak RSS MiB per instance"] = " / ".join(f"{peak:.0f}" for peak in peaks)
        figures["peak RSS MiB, all instances"] = round(sum(peaks), 1)
        await group.stop()
        if restart:
            group = InstanceGroup(settings, instances)
            started = time.monotonic()
            await group.start()
            await wait_until(group.ready, cold_timeout, "every restarted instance to be ready", interval=0.05)
            figures["restart -> every instance ready s"] = round(time.monotonic() - started, 3)
            restarted = await group.samples()  # what of it went to reading the tables and restoring the tasks
            for table, what in (("inventory", "inventory tables read"), ("changelog", "tasks restored")):
                slowest = max(sample(m, "placement_restore_seconds", table=table) for m in restarted)
                figures[f"restart: {what} (slowest instance) s"] = round(slowest, 3)
            # a Placement submitted at once: decided while the restored ones are re-decided, or after them all
            role, key, value = _renamed(next(workload.placement_items()), "after-restart")
            await send([(role, key, value)])
            await wait_until(lambda: key in tail.keys, cold_timeout, "the new placement's decision", interval=0.05)
            figures["restart -> a new placement's decision s"] = round(time.monotonic() - started, 3)
            figures["peak RSS MiB per restarted instance"] = " / ".join(
                f"{member.peak_rss_mib():.0f}" for member in group.members
            )
            await group.stop()
        if heaviest:
            floor = await _transfer_floor(settings, counts[names.decisions], heaviest, tail)
            figures["largest change's records re-published without the engine: last decision ms"] = round(
                floor * 1000, 1
            )
    finally:
        await group.stop()
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
        "--spread",
        choices=("off", "labels", "on"),
        default="off",
        help="clusters get topology labels (3 regions x 3 zones) with `labels`, and a fifth of the placements "
        "spread over them with `on` (the label change then also moves the cluster's zone)",
    )
    parser.add_argument(
        "--cel-heavy", action="store_true", help="65 %% of the placements select by CEL (5 %% by default)"
    )
    parser.add_argument(
        "--compression",
        choices=("none", "gzip", "snappy", "lz4", "zstd"),
        default=KafkaSettings().compression_type,
        help="the processor's record batch codec (default: the service default)",
    )
    parser.add_argument(
        "--instances",
        type=int,
        nargs="+",
        default=[1, 2],
        help="processor instances of one consumer group, a Kafka phase for each count (default: 1 2)",
    )
    parser.add_argument(
        "--task-partitions", type=int, default=6, help="partitions of the co-partitioned topics (default: 6)"
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="after the cold start, stop the instances and time a new group's start until ready (restore)",
    )
    parser.add_argument(
        "--no-changes", action="store_true", help="no engine phase, no changes: the cold start (and restart) only"
    )
    args = parser.parse_args()

    def workload() -> Workload:
        return Workload(
            args.placements,
            args.clusters,
            args.namespaces,
            datetime.now(UTC),
            seed=args.seed,
            topology=args.spread != "off",
            spread=args.spread == "on",
            cel_heavy=args.cel_heavy,
        )

    targets: dict[str, str] | None = None
    heaviest: list[OutputRecord] | None = None
    if not args.no_changes:
        figures, targets, heaviest = engine_only(workload())
        print_figures("cluster placement: engine only (pure Runtime, no I/O)", figures)
    if args.no_kafka:
        return

    async def run(bootstrap: str, instances: int) -> dict[str, float | str]:
        return await through_kafka(
            bootstrap,
            workload(),
            targets,
            heaviest,
            compression=args.compression,
            instances=instances,
            task_partitions=args.task_partitions,
            restart=args.restart,
        )

    with kafka_broker() as bootstrap:
        for instances in args.instances:
            kafka_figures = asyncio.run(run(bootstrap, instances))
            print()
            print_figures(
                f"cluster placement: through Kafka, {instances} instance(s) of `placement-stream run`, "
                "decisions read by another process (read_committed)",
                kafka_figures,
            )


if __name__ == "__main__":
    main()
