"""One expensive subject among cheap ones, through Kafka: does it hold the others back, or take the memory?

Two subjects that once held a processor for minutes are produced against a running `placement-stream run` over a
fleet of N clusters, each followed at once by canary Placements (one per task partition) whose decisions are
cheap:

- `cel`: a Placement whose CEL expression reads the cluster and then loops until the per-expression cost limit
  stops it, on every cluster (the placement budget, cluster-placement C17, bounds the whole evaluation);
- `hybrid`: a PlacementRule with `replicas: 1` and no advisors over every cluster (reduced in one evaluation,
  hybrid-placement H6).

It prints, per run: seconds from producing the heavy subject to its decision being visible to a read_committed
reader, the slowest canary's seconds from its own produce to its decision, the processor's peak RSS growth over
the run, and the largest decision record. Figures are printed, never asserted.

Usage: `python -m benchmarks.heavy_subjects [--clusters 1000] [--only cel,hybrid] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.instances import Instance
from benchmarks.support import client_options, kafka_broker, print_table, wait_until
from benchmarks.tail import TopicTail
from streams.kafka.admin import create_topics
from streams.settings import KafkaSettings, Settings, TopicNames
from topics.names import TopicRole

__all__ = ["main"]

_SET = "fleet"
_LIST = "[" + ",".join(map(str, range(1000))) + "]"
HOSTILE = f"managedCluster.metadata.name != '' && {_LIST}.all(x, {_LIST}.all(y, x >= 0))"
"""A million comprehension steps on every cluster: each stopped at the per-expression limit."""


def _event(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": uuid.uuid4().hex,
        "source": "/benchmarks/heavy-subjects",
        "type": f"{kind}.v1",
        "time": datetime.now(UTC).isoformat(),
        "datacontenttype": "application/json",
        "data": data,
    }


def _fleet(clusters: int) -> list[tuple[TopicRole, str, dict[str, Any]]]:
    selector = {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}
    items = [
        (TopicRole.CLUSTER_STATUS, f"ManagedClusterSet/{_SET}",
         _event("managedclusterset.applied", {"metadata": {"name": _SET}, "spec": selector})),
        (TopicRole.CLUSTER_STATUS, f"ManagedClusterSetBinding/apps/{_SET}",
         _event("managedclustersetbinding.applied",
                {"metadata": {"name": _SET, "namespace": "apps"}, "spec": {"clusterSet": _SET}})),
    ]  # fmt: skip
    for i in range(clusters):
        labels = {"cluster.open-cluster-management.io/clusterset": _SET, "env": "prod" if i % 2 else "dev"}
        data = {"metadata": {"name": f"c{i:05d}", "labels": labels}}
        items.append((TopicRole.CLUSTER_STATUS, f"ManagedCluster/c{i:05d}", _event("managedcluster.applied", data)))
    return items


def _placement(name: str, predicates: list[dict[str, Any]]) -> tuple[TopicRole, str, dict[str, Any]]:
    spec = {"clusterSets": [_SET], "predicates": predicates}
    data = {"metadata": {"namespace": "apps", "name": name, "generation": 1}, "spec": spec}
    return TopicRole.SUBMISSIONS, f"Placement/apps/{name}", _event("placement.applied", data)


def _heavy(kind: str) -> tuple[TopicRole, str, dict[str, Any]]:
    if kind == "cel":
        return _placement("hostile", [{"requiredClusterSelector": {"celSelector": {"celExpressions": [HOSTILE]}}}])
    spec = {"replicas": 1, "targetLabels": {"matchLabels": {"cluster.open-cluster-management.io/clusterset": _SET}}}
    data = {"metadata": {"namespace": "apps", "name": "wide", "generation": 1}, "spec": spec}
    return TopicRole.SUBMISSIONS, "PlacementRule/apps/wide", _event("placementrule.applied", data)


def _canaries(round_: int, count: int) -> list[tuple[TopicRole, str, dict[str, Any]]]:
    label = {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    return [_placement(f"canary-{round_}-{i}", [label]) for i in range(count)]


async def _largest_decision(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = AIOKafkaConsumer(
        isolation_level="read_committed", max_partition_fetch_bytes=16 * 1024 * 1024, **client_options(bootstrap)
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        largest = 0
        deadline = time.monotonic() + 60
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end] and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=1000)
            for records in batch.values():
                largest = max([largest, *(len(r.value or b"") for r in records)])
        return largest
    finally:
        await consumer.stop()


async def _run(bootstrap: str, kind: str, clusters: int, round_: int) -> dict[str, float]:
    run = uuid.uuid4().hex[:8]
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap, group_id=f"heavy-{run}", task_partitions=6),
        topics=TopicNames.prefixed(f"heavy-{run}."),
        http_port=0,
    )
    counts = await create_topics(settings)
    names = settings.topics
    producer = AIOKafkaProducer(acks="all", linger_ms=2, **client_options(bootstrap))
    await producer.start()

    async def send(items: list[tuple[TopicRole, str, dict[str, Any]]]) -> float:
        sent = [await producer.send(names.name(role), orjson.dumps(v), key=k.encode()) for role, k, v in items]
        await asyncio.gather(*sent)
        return time.monotonic()

    tail = TopicTail(bootstrap, names.decisions, counts[names.decisions])
    instance = Instance(settings, f"heavy-{run}-0")
    try:
        await send(_fleet(clusters))
        await tail.start()
        await instance.start()
        await wait_until(instance.ready, 120, "the instance to be ready", interval=0.05)
        warm = _canaries(0, 6)
        await send(warm)
        await wait_until(lambda: all(k in tail.keys for _, k, _ in warm), 60, "the warm-up canaries", interval=0.01)
        rss_before = instance.peak_rss_mib()
        heavy = _heavy(kind)
        heavy_sent = await send([heavy])
        canaries = _canaries(round_ + 1, 6)
        canaries_sent = await send(canaries)
        keys = {k for _, k, _ in canaries} | {heavy[1]}
        await wait_until(lambda: keys <= tail.keys, 600, "the heavy subject and the canaries", interval=0.01)
        first = {key: min(at for at, k in tail.arrivals if k == key) for key in keys}
        return {
            "heavy s": first[heavy[1]] - heavy_sent,
            "slowest canary s": max(first[k] for _, k, _ in canaries) - canaries_sent,
            "RSS growth MiB": instance.peak_rss_mib() - rss_before,
            "largest decision KiB": await _largest_decision(bootstrap, names.decisions, counts[names.decisions]) / 1024,
        }
    finally:
        await instance.stop()
        await tail.stop()
        await producer.stop()


async def _measure(kinds: list[str], clusters: list[int], repeat: int) -> None:
    rows: list[list[object]] = []
    with kafka_broker() as bootstrap:
        for kind in kinds:
            for size in clusters:
                runs = [await _run(bootstrap, kind, size, n) for n in range(repeat)]
                figures = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
                each = {name: " / ".join(f"{r[name]:.2f}" for r in runs) for name in runs[0]}
                rows.append([kind, size, *(f"{figures[n]:.2f} ({each[n]})" for n in runs[0])])
    header = ["subject", "clusters", "heavy s", "slowest canary s", "RSS growth MiB", "largest decision KiB"]
    print_table(f"heavy subjects through Kafka, medians of {repeat} (runs in brackets)", header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", default="1000", help="comma-separated fleet sizes")
    parser.add_argument("--only", default="cel,hybrid", help="cel, hybrid or both")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.clusters.split(",")]
    asyncio.run(_measure(args.only.split(","), sizes, args.repeat))


if __name__ == "__main__":
    main()
