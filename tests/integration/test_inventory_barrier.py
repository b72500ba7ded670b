"""Decisions are never computed on inventory older than their subject record (the inventory barrier)."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from kafka_support import KafkaWorld, event, running, values, wait_for

from streams.kafka.admin import create_topics
from streams.kafka.barrier import InventoryBarrier
from streams.kafka.tables import new_reader

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


FAILURES = ["the read fails after fetching", "the batch fails after the read"]


@pytest.mark.parametrize("failure", FAILURES)
async def test_inventory_fetched_for_a_batch_that_fails_goes_with_the_next(world: KafkaWorld, failure: str) -> None:
    """A broker outage can fail a batch after the barrier fetched inventory: the tables' reader is past those
    records, so dropping them would lose those inventory changes for good."""
    settings = world.settings()
    await create_topics(settings)
    status = settings.topics.cluster_status
    await world.produce([(status, f"ManagedCluster/c{n}", cluster(n)) for n in range(5)])
    inventory = [TopicPartition(status, 0)]
    tables, offsets = new_reader(settings.kafka, "tables"), new_reader(settings.kafka, "offsets")
    await tables.start()
    await offsets.start()
    barrier = InventoryBarrier(tables, offsets, inventory, timeout=2.0)
    try:
        tables.assign(inventory)
        await wait_for(lambda: tables.highwater(inventory[0]) == 5)  # all 5 are fetched already
        if failure == "the read fails after fetching":
            with pytest.raises((TimeoutError, KafkaError)):  # no such partition: its end is never known
                await barrier.read(to_end=True, max_records=100, subjects=[TopicPartition(f"{status}-none", 0)])
        else:
            records, _ = await barrier.read(to_end=True, max_records=100)
            assert len(records) == 5
            barrier.give_back(records)
        records, _ = await barrier.read(to_end=True, max_records=100)
        assert [r.offset for r in records] == [0, 1, 2, 3, 4]
        again, _ = await barrier.read(to_end=True, max_records=100)
        assert again == [], "given once, not twice"
    finally:
        await barrier.stop()


async def test_the_subjects_ends_are_taken_before_the_tables_ends(world: KafkaWorld) -> None:
    """A subject record below its end was produced before that end was taken; so must the tables' ends be taken
    after it, by a request of their own, for the inventory produced before that record to lie below them."""
    settings = world.settings()
    counts = await create_topics(settings)
    status, submissions = settings.topics.cluster_status, settings.topics.submissions
    await world.produce([(status, "ManagedCluster/c0", cluster(0))])

    async def applied(records: object) -> None:
        return None

    barrier, count = await InventoryBarrier.catch_up(settings.kafka, [status], applied, [submissions])
    asked: list[tuple[str, set[str]]] = []
    offsets = barrier._offsets
    end_offsets = offsets.end_offsets

    async def spied(partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        topics = {tp.topic for tp in partitions}
        asked.append(("asked", topics))
        answer: dict[TopicPartition, int] = await end_offsets(partitions)
        asked.append(("answered", topics))
        return answer

    offsets.end_offsets = spied  # type: ignore[method-assign]
    try:
        await world.produce([(submissions, "Placement/apps0/web", event("placement.applied", {}))])
        subjects = [TopicPartition(submissions, p) for p in range(counts[submissions])]
        _, ends = await barrier.read(to_end=True, max_records=100, subjects=subjects)
    finally:
        await barrier.stop()
    assert count == 1
    assert sorted(ends.values()) == [0] * (len(subjects) - 1) + [1]
    assert asked == [("asked", {submissions}), ("answered", {submissions}), ("asked", {status}), ("answered", {status})]
