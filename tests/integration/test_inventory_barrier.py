"""Decisions are never computed on inventory older than their subject record (the inventory barrier)."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from kafka_support import KafkaWorld, event, running, values

pytestmark = pytest.mark.integration

ROUNDS = 200
SET_LABEL = "cluster.open-cluster-management.io/clusterset"


def round_records(world: KafkaWorld, n: int) -> tuple[list[tuple[str, str, bytes]], tuple[str, str, bytes]]:
    """A cluster in its own set, the set and its binding; then the Placement that needs all three."""
    status, ns = world.topics.cluster_status, f"apps{n}"
    inventory = [
        (status, f"ManagedCluster/c{n}", cluster(n)),
        (status, f"ManagedClusterSet/s{n}", set_(n)),
        (status, f"ManagedClusterSetBinding/{ns}/s{n}", binding(n)),
    ]
    data = {"metadata": {"namespace": ns, "name": "web"}, "spec": {"clusterSets": [f"s{n}"]}}
    subject = (world.topics.submissions, f"Placement/{ns}/web", orjson.dumps(event("placement.applied", data)))
    return [(t, k, orjson.dumps(v)) for t, k, v in inventory], subject


def cluster(n: int) -> dict[str, object]:
    return event("managedcluster.applied", {"metadata": {"name": f"c{n}", "labels": {SET_LABEL: f"s{n}"}}})


def set_(n: int) -> dict[str, object]:
    return event("managedclusterset.applied", {"metadata": {"name": f"s{n}"}})


def binding(n: int) -> dict[str, object]:
    data = {"metadata": {"namespace": f"apps{n}", "name": f"s{n}"}, "spec": {"clusterSet": f"s{n}"}}
    return event("managedclustersetbinding.applied", data)


async def test_a_subject_is_decided_only_with_the_inventory_produced_before_it(world: KafkaWorld) -> None:
    async with running(world.settings()):
        producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap, acks="all", linger_ms=0)
        await producer.start()
        try:
            for n in range(ROUNDS):
                inventory, (topic, key, value) = round_records(world, n)
                acks = [await producer.send(t, v, key=k.encode()) for t, k, v in inventory]
                await asyncio.gather(*acks)  # acknowledged: in the log before the subject is sent
                await producer.send(topic, value, key=key.encode())
            await producer.flush()
        finally:
            await producer.stop()

        def all_decided(records: list[object]) -> bool:
            return len({v["data"]["namespace"] for v in values(records, "placement.decided.v1")}) >= ROUNDS  # type: ignore[arg-type]

        records = await world.collect(world.topics.decisions, all_decided, timeout=120)
    first: dict[str, dict[str, object]] = {}
    for value in values(records, "placement.decided.v1"):
        first.setdefault(value["data"]["namespace"], value["data"])
    premature = {ns: d["numberOfSelectedClusters"] for ns, d in first.items() if d["numberOfSelectedClusters"] != 1}
    assert len(first) == ROUNDS
    assert premature == {}, f"{len(premature)} first decisions missed inventory produced before them"
