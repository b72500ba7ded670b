"""Cluster placement (OCM Placement) throughput and change latency: the engine alone, then through Kafka.

1. engine only: N placements over M clusters decided from cold through the pure Runtime (no I/O);
2. Kafka: inventory and the N placements pre-produced, a Processor started in this process, time until every
   placement's first decision is committed (read_committed consumer);
3. one cluster's label changed, then (separately) one NoSelect taint added: time from producing the change
   until every resulting decision is published, and how many placements were re-decided for it versus how
   many decisions actually changed;
4. peak RSS of this process.

Figures are printed, never asserted. Usage:
`python -m benchmarks.cluster_placement [--placements 10000] [--clusters 1000] [--namespaces 40] [--no-kafka]`
(uses $KAFKA_BOOTSTRAP_SERVERS when set, else starts a local broker).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from benchmarks.support import kafka_broker, peak_rss_mib, print_figures
from engine.cluster import ClusterPlacementEngine
from engine.core import EngineSettings, SubjectEngine
from engine.registry import build_engines
from engine.runtime import InputRecord, OutputRecord, Runtime
from streams.kafka.admin import ensure_topics
from streams.memory import tune_garbage_collector
from streams.service import Processor
from streams.settings import KafkaSettings, Settings, TopicNames
from topics.names import TopicRole

__all__ = ["Workload", "main"]

CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
EXCLUSIVE_SETS = ("set-a", "set-b", "set-c", "set-d")
GPU_SET = "gpu"  # a LabelSelector set: every cluster labelled gpu=true, whatever its exclusive set
REGIONS = ("us-east", "us-west", "eu-west", "eu-central", "ap-south", "ap-east")
ENVS = ("prod", "prod", "staging", "dev")
PLATFORMS = ("AWS", "GCP", "Azure", "OpenStack")
CEL_POOL = (
    'managedCluster.metadata.labels["tier"] == "gold"',
    'managedCluster.status.clusterClaims.exists(c, c.name == "kubeversion.open-cluster-management.io"'
    ' && semver(c.value).isGreaterThan(semver("1.28.0")))',
    "int(managedCluster.status.allocatable.cpu) >= 32",
    'managedCluster.metadata.name.startsWith("cluster-00") || managedCluster.metadata.labels.env == "staging"',
)

Item = tuple[TopicRole, str, dict[str, Any]]


def _event(kind: str, data: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": uuid.uuid4().hex,
        "source": "/benchmarks/cluster_placement",
        "type": f"{kind}.v1",
        "time": at.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": data,
    }


@dataclass
class Workload:
    """A deterministic, realistic mix: exclusive and label-selector sets, bindings per namespace, taints,
    label/claim/CEL predicates, numberOfClusters, resource prioritizers, tolerations and decision groups."""

    placements: int
    clusters: int
    namespaces: int
    now: datetime
    seed: int = 7
    cluster_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    cluster_status: dict[str, dict[str, Any]] = field(default_factory=dict)

    def cluster_name(self, i: int) -> str:
        return f"cluster-{i:04d}"

    def cluster_event(self, name: str, labels: dict[str, str], rng: random.Random) -> dict[str, Any]:
        status = self.cluster_status.get(name)
        if status is None:
            status = self.cluster_status[name] = self._status(rng)
        return _event(
            "managedcluster.applied", {"metadata": {"name": name, "labels": labels}, "status": status}, self.now
        )

    @staticmethod
    def _status(rng: random.Random) -> dict[str, Any]:
        cpu = rng.choice((4, 8, 16, 32, 64))
        memory = cpu * rng.choice((2, 4, 8))
        return {
            "allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi"},
            "capacity": {"cpu": str(cpu * 2), "memory": f"{memory * 2}Gi"},
            "clusterClaims": [
                {"name": "platform.open-cluster-management.io", "value": rng.choice(PLATFORMS)},
                {
                    "name": "kubeversion.open-cluster-management.io",
                    "value": f"1.{rng.randint(26, 31)}.{rng.randint(0, 9)}",
                },
            ],
        }

    def inventory(self) -> Iterator[Item]:
        """Cluster sets, bindings, clusters and taint sets, in a producible order."""
        rng = random.Random(self.seed)
        for name in EXCLUSIVE_SETS:
            yield (
                TopicRole.CLUSTER_STATUS,
                f"ManagedClusterSet/{name}",
                _event("managedclusterset.applied", {"metadata": {"name": name}}, self.now),
            )
        gpu = {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"gpu": "true"}}}
        yield (
            TopicRole.CLUSTER_STATUS,
            f"ManagedClusterSet/{GPU_SET}",
            _event(
                "managedclusterset.applied", {"metadata": {"name": GPU_SET}, "spec": {"clusterSelector": gpu}}, self.now
            ),
        )
        for n in range(self.namespaces):
            for cluster_set in self.bound_sets(n):
                data = {
                    "metadata": {"name": cluster_set, "namespace": f"ns-{n:02d}"},
                    "spec": {"clusterSet": cluster_set},
                }
                yield (
                    TopicRole.CLUSTER_STATUS,
                    f"ManagedClusterSetBinding/ns-{n:02d}/{cluster_set}",
                    _event("managedclustersetbinding.applied", data, self.now),
                )
        added = (self.now - timedelta(seconds=60)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        for i in range(self.clusters):
            name = self.cluster_name(i)
            labels = {
                CLUSTERSET_LABEL: EXCLUSIVE_SETS[i % len(EXCLUSIVE_SETS)],
                "region": rng.choice(REGIONS),
                "env": rng.choice(ENVS),
                "tier": rng.choice(("gold", "silver", "bronze")),
            }
            if rng.random() < 0.1:
                labels["gpu"] = "true"
            self.cluster_labels[name] = labels
            yield TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", self.cluster_event(name, labels, rng)
            roll = rng.random()
            effect = (
                "NoSelect"
                if roll < 0.04
                else "PreferNoSelect"
                if roll < 0.07
                else "NoSelectIfNew"
                if roll < 0.09
                else None
            )
            if effect is not None:
                key = {"NoSelect": "maintenance", "PreferNoSelect": "degraded", "NoSelectIfNew": "draining"}[effect]
                taint = {"key": key, "value": "", "effect": effect, "timeAdded": added}
                yield (
                    TopicRole.TAINTS,
                    name,
                    _event("cluster.taints.updated", {"cluster": name, "taints": [taint]}, self.now),
                )

    def bound_sets(self, n: int) -> list[str]:
        rng = random.Random(self.seed * 1000 + n)
        sets = rng.sample(EXCLUSIVE_SETS, rng.randint(1, 2))
        if rng.random() < 0.3:
            sets.append(GPU_SET)
        return sets

    def placement_items(self) -> Iterator[Item]:
        rng = random.Random(self.seed + 1)
        for i in range(self.placements):
            n = i % self.namespaces
            namespace, name = f"ns-{n:02d}", f"p-{i:05d}"
            spec: dict[str, Any] = {}
            bucket = i % 20
            if bucket < 8:
                if rng.random() < 0.5:
                    selector: dict[str, Any] = {"matchLabels": {"region": rng.choice(REGIONS)}}
                else:
                    selector = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}
                spec["predicates"] = [{"requiredClusterSelector": {"labelSelector": selector}}]
            elif bucket < 12:
                platforms = rng.sample(PLATFORMS, 2)
                claim = {
                    "matchExpressions": [
                        {"key": "platform.open-cluster-management.io", "operator": "In", "values": platforms}
                    ]
                }
                spec["predicates"] = [{"requiredClusterSelector": {"claimSelector": claim}}]
            elif bucket == 12:
                spec["predicates"] = [
                    {"requiredClusterSelector": {"celSelector": {"celExpressions": [rng.choice(CEL_POOL)]}}}
                ]
            if rng.random() < 0.6:
                spec["numberOfClusters"] = rng.randint(1, 5)
            if rng.random() < 0.3:
                spec["clusterSets"] = [rng.choice(self.bound_sets(n))]
            roll = rng.random()
            if roll < 0.25:
                spec["prioritizerPolicy"] = {
                    "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2}]
                }
            elif roll < 0.35:
                spec["prioritizerPolicy"] = {
                    "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]
                }
            elif roll < 0.40:
                spec["prioritizerPolicy"] = {
                    "mode": "Exact",
                    "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}],
                }
            if rng.random() < 0.2:
                toleration: dict[str, Any] = {"key": "maintenance", "operator": "Exists", "effect": "NoSelect"}
                if rng.random() < 0.5:
                    toleration["tolerationSeconds"] = 3600
                spec["tolerations"] = [toleration]
            if rng.random() < 0.1:
                spec["decisionStrategy"] = {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}
            data = {"metadata": {"name": name, "namespace": namespace, "generation": 1}, "spec": spec}
            yield TopicRole.SUBMISSIONS, f"Placement/{namespace}/{name}", _event("placement.applied", data, self.now)

    def relabelled(self, name: str) -> Item:
        """The cluster with another region label (same status as before apart from labels)."""
        labels = dict(self.cluster_labels[name])
        labels["region"] = REGIONS[(REGIONS.index(labels["region"]) + 1) % len(REGIONS)]
        self.cluster_labels[name] = labels
        return TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", self.cluster_event(name, labels, random.Random())

    def tainted(self, name: str, at: datetime) -> Item:
        taint = {"key": "benchmark", "value": "", "effect": "NoSelect"}
        return TopicRole.TAINTS, name, _event("cluster.taints.updated", {"cluster": name, "taints": [taint]}, at)


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

    def most_decided(self) -> str:
        counts: dict[str, int] = {}
        for clusters in self.decided.values():
            for name in clusters:
                counts[name] = counts.get(name, 0) + 1
        return max(sorted(counts), key=lambda name: counts[name])


# --- 1. engine only --------------------------------------------------------------------------------
def engine_only(workload: Workload) -> tuple[dict[str, float | str], str]:
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
    target = tally.most_decided()
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
        "selected clusters (sum over placements)": sum(len(c) for c in tally.decided.values()),
    }
    offset = workload.placements
    for label, item in (
        (f"label change on {target}", workload.relabelled(target)),
        (f"NoSelect taint on {target}", workload.tainted(target, now)),
    ):
        calls, published = cluster_engine.decide_calls, cluster_engine.published
        started = time.perf_counter()
        changed = _decisions(runtime.process(_records([item], offset), now))
        took = time.perf_counter() - started
        offset += 1
        figures[f"{label}: re-decided"] = cluster_engine.decide_calls - calls
        figures[f"{label}: decisions changed"] = len(changed)
        figures[f"{label}: events published"] = cluster_engine.published - published
        figures[f"{label}: engine s"] = round(took, 4)
    figures["peak RSS MiB (after engine phase)"] = round(peak_rss_mib(), 1)
    return figures, target


# --- 2 and 3. through Kafka ------------------------------------------------------------------------
class _DecisionTail:
    """Reads the decisions topic (read_committed) and notes when each record arrived."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed", enable_auto_commit=False
        )
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.arrivals: list[tuple[float, str]] = []
        self.keys: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.consumer.assign(self.tps)
        await self.consumer.seek_to_beginning(*self.tps)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=50, max_records=5000)
            at = time.perf_counter()
            for records in batch.values():
                for record in records:
                    if record.key is not None and record.value is not None:
                        key = record.key.decode()
                        self.keys.add(key)
                        self.arrivals.append((at, key))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.consumer.stop()


async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def through_kafka(bootstrap: str, workload: Workload, target: str) -> dict[str, float | str]:
    run = uuid.uuid4().hex[:8]
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap, group_id=f"bench-{run}", task_partitions=3),
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

    tail = _DecisionTail(bootstrap, names.decisions, counts[names.decisions])
    figures: dict[str, float | str] = {}
    try:
        await send(list(workload.inventory()))
        started = time.perf_counter()
        await send(list(workload.placement_items()))
        figures["produce placements s"] = round(time.perf_counter() - started, 3)
        await tail.start()
        engines = build_engines()
        cluster_engine = _cluster_engine(engines)
        processor = Processor(settings, engines=engines)
        started = time.perf_counter()
        task = asyncio.create_task(processor.run())
        await _until(lambda: processor.ready or task.done(), 120, "the processor to be ready")
        if task.done():
            task.result()
        figures["start -> ready s"] = round(time.perf_counter() - started, 3)
        await _until(lambda: len(tail.keys) >= workload.placements, 300, "every placement's first decision")
        total = time.perf_counter() - started
        figures["start -> all placements committed s"] = round(total, 3)
        figures["placements/s (incl. start)"] = round(workload.placements / total)
        figures["decision records"] = len(tail.arrivals)
        figures["transactions committed"] = processor.batches_done

        for label, item in (
            (f"label change on {target}", workload.relabelled(target)),
            (f"NoSelect taint on {target}", workload.tainted(target, datetime.now(UTC))),
        ):
            await asyncio.sleep(0.5)  # quiet period: nothing in flight
            seen, done = len(tail.arrivals), processor.records_done
            calls, published = cluster_engine.decide_calls, cluster_engine.published
            started = time.perf_counter()
            await send([item])
            await _until(lambda d=done: processor.records_done > d, 30, "the change to be processed")
            expected = cluster_engine.published - published
            await _until(lambda s=seen, e=expected: len(tail.arrivals) >= s + e, 30, "the re-decisions")
            new = tail.arrivals[seen:]
            last = max((at for at, _ in new), default=time.perf_counter())
            figures[f"{label}: re-decided"] = cluster_engine.decide_calls - calls
            figures[f"{label}: decisions changed"] = len({key for _, key in new})
            figures[f"{label}: produce -> last decision ms"] = round((last - started) * 1000, 1)
        processor.request_stop()
        await asyncio.wait_for(task, 30)
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
    args = parser.parse_args()

    def workload() -> Workload:
        return Workload(args.placements, args.clusters, args.namespaces, datetime.now(UTC), seed=args.seed)

    figures, target = engine_only(workload())
    print_figures("cluster placement: engine only (pure Runtime, no I/O)", figures)
    if args.no_kafka:
        return

    async def run() -> dict[str, float | str]:
        with kafka_broker() as bootstrap:
            return await through_kafka(bootstrap, workload(), target)

    kafka_figures = asyncio.run(run())
    kafka_figures["peak RSS MiB (whole run)"] = round(peak_rss_mib(), 1)
    print()
    print_figures("cluster placement: through Kafka (in-process processor, read_committed)", kafka_figures)


if __name__ == "__main__":
    main()
