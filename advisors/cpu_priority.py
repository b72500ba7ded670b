"""Example priority advisor: prefers candidates with more allocatable CPU.

It keeps a table of every ManagedCluster's `status.allocatable.cpu`, read from the cluster-status topic from the
beginning and then followed, and answers each request that names it with every candidate, scored 0..100 in
proportion to its CPU (the largest gets 100; unknown CPU or a kind other than ManagedCluster scores 0).

    python -m advisors.cpu_priority --bootstrap 127.0.0.1:9092 --name cpu [--topic-prefix PREFIX]
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition

from advisors.common import AdvisorConfig, base_parser, echo, run_main, serve, start_from_args
from topics.codec import decode_event
from topics.errors import ContractError
from topics.inventory import ManagedCluster
from topics.k8s import ObjectReference
from topics.names import TopicRole
from topics.placementrule import RecommendationEntry
from topics.quantity import parse_quantity

__all__ = ["CpuTable", "cpu_of", "follow_cluster_status", "main", "score_by_cpu"]

_LOG = logging.getLogger("advisors.cpu_priority")
_CLUSTER = "ManagedCluster"
_RETRY_SECONDS = 2.0


def cpu_of(cluster: ManagedCluster) -> float | None:
    """Allocatable CPU in cores, None when absent or unreadable."""
    raw = cluster.status.allocatable.get("cpu")
    return None if raw is None else parse_quantity(raw)


class CpuTable:
    """Allocatable CPU by cluster name, kept from cluster-status records (a global table)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.ready = asyncio.Event()
        """Set once the topic has been read up to the end offsets seen at start."""

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record: a ManagedCluster event, a deletion, or a tombstone; other kinds are ignored."""
        if value is None:
            text = key.decode(errors="replace") if key else ""
            kind, _, name = text.partition("/")
            if kind == _CLUSTER and name:
                self.cpu.pop(name, None)
            return
        try:
            event = decode_event(value, TopicRole.CLUSTER_STATUS)
        except ContractError as exc:
            _LOG.warning("skipping an unreadable cluster-status record: %s", exc)
            return
        if event.kind.name == "managedcluster.deleted":
            self.cpu.pop(str(event.data.metadata.name), None)  # type: ignore[attr-defined]
        elif isinstance(event.data, ManagedCluster):
            cpu = cpu_of(event.data)
            if cpu is None:
                self.cpu.pop(event.data.metadata.name, None)
            else:
                self.cpu[event.data.metadata.name] = cpu


def _is_cluster(candidate: ObjectReference) -> bool:
    return candidate.kind in (None, _CLUSTER) and not candidate.namespace


def score_by_cpu(candidates: Sequence[ObjectReference], cpu: Mapping[str, float]) -> list[RecommendationEntry]:
    """Every candidate with a score proportional to its CPU; the best gets 100, all get 0 when none is known."""
    values = [max(cpu.get(c.name, 0.0), 0.0) if _is_cluster(c) else 0.0 for c in candidates]
    top = max(values, default=0.0)
    return [
        echo(c, 0 if top <= 0 else min(100, int(100 * v / top + 0.5))) for c, v in zip(candidates, values, strict=True)
    ]


async def follow_cluster_status(config: AdvisorConfig, table: CpuTable, stop: asyncio.Event) -> None:
    """Read the cluster-status topic from the beginning, mark the table ready when caught up, keep following.

    The consumer has no group, so it is given every partition of the topic and starts at the earliest offset.
    """
    topic = config.topic(TopicRole.CLUSTER_STATUS)
    consumer = AIOKafkaConsumer(
        topic,
        **config.client_options(),
        client_id=f"advisor-{config.name}-status",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        waited = 0.0
        while not consumer.assignment() and not stop.is_set():
            if waited >= _RETRY_SECONDS and not table.ready.is_set():
                _LOG.warning("topic %s has no partitions yet; answering with an empty CPU table meanwhile", topic)
                table.ready.set()
            await asyncio.sleep(0.1)
            waited += 0.1
        ends: dict[TopicPartition, int] = (
            await consumer.end_offsets(list(consumer.assignment())) if not stop.is_set() else {}
        )
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500, max_records=1000)
            for records in batch.values():
                for record in records:
                    table.apply(record.key, record.value)
            if not table.ready.is_set() and all([await consumer.position(tp) >= end for tp, end in ends.items()]):
                _LOG.info("cluster-status read: %d clusters with allocatable CPU", len(table.cpu))
                table.ready.set()
    finally:
        await consumer.stop()


async def _run(config: AdvisorConfig, stop: asyncio.Event) -> None:
    table = CpuTable()

    async def follow() -> None:
        try:
            await follow_cluster_status(config, table, stop)
        finally:
            stop.set()  # without the table there is nothing to answer with: stop the request loop too

    follower = asyncio.create_task(follow())
    try:
        await serve(config, lambda request: score_by_cpu(request.candidates, table.cpu), stop, ready=table.ready)
    finally:
        stop.set()
        await follower


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args = base_parser("Example priority advisor: prefers clusters with more allocatable CPU.").parse_args(argv)
    config = start_from_args(args)
    return run_main(lambda stop: _run(config, stop))


if __name__ == "__main__":
    sys.exit(main())
