"""Producers in other languages on a real broker: records partitioned by murmur2 of the key are decided as replay
decides them; a librdkafka producer's default partitioner (CRC32) puts records on other tasks' partitions, and
those are dead-lettered, never decided by the task they arrived at.

confluent-kafka (librdkafka) produces with its default partitioner and with `murmur2_random`, as the README's
producer section shows; the Go example (`examples/producers/go`, franz-go) is built with the machine's Go
toolchain and run against the broker.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer
from kafka_support import EXAMPLES, KafkaWorld, Record, running, stable, wait_for
from test_cluster_placement_kafka import base_inventory, inventory_has, placement

from streams.kafka.tasks import partition_of
from streams.replay import Replayer
from streams.service import Processor

pytestmark = pytest.mark.integration

PARTITIONS = 4
CLUSTERS = {"c1": {"tier": "gold"}, "c2": {"tier": "silver"}, "c3": {"tier": "gold"}}
TIERS = ("gold", "silver", "bronze")
"""What the placements select by: a decision depends on the placement alone, not on the order or batches in
which placements are decided (the balance prioritizer of a `numberOfClusters` choice does)."""
DLQ = "__connect.errors."
Item = tuple[str, str, dict[str, Any]]


def placements(world: KafkaWorld, prefix: str, count: int) -> list[Item]:
    """Placements `<prefix>00`.. in namespace apps, each selecting the clusters of one tier (bronze: none)."""
    return [
        (world.topics.submissions, f"Placement/apps/{prefix}{i:02}", placement(f"{prefix}{i:02}", _tier(i)))
        for i in range(count)
    ]


def _tier(i: int) -> dict[str, Any]:
    selector = {"labelSelector": {"matchLabels": {"tier": TIERS[i % len(TIERS)]}}}
    return {"predicates": [{"requiredClusterSelector": selector}]}


def deleted(applied: dict[str, Any]) -> dict[str, Any]:
    """The `placement.deleted` event of an applied Placement."""
    data = {"metadata": applied["data"]["metadata"]}
    return {**applied, "id": f"{applied['id']}-deleted", "type": "placement.deleted.v1", "data": data}


def produce_with_librdkafka(bootstrap: str, items: Sequence[Item], config: dict[str, str]) -> dict[str, int]:
    """Send with confluent-kafka; the partition each key arrived at, from the delivery reports."""
    arrived: dict[str, int] = {}
    failed: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failed.append(str(error))
        else:
            arrived[message.key().decode()] = message.partition()

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **config})
    for topic, key, value in items:
        headers = {"content-type": "application/cloudevents+json; charset=UTF-8"}
        producer.produce(topic, key=key, value=orjson.dumps(value), headers=headers, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert failed == []
    return arrived


def decision(value: dict[str, Any]) -> Any:
    """A decision event without its instants, ids and scores: the balance prioritizer scores a cluster by the
    placements decided before, so scores depend on the order placements are decided in, the decisions not."""
    found = stable(value)
    found["data"].pop("scores", None)
    return found


def replayed(lines: Sequence[Item], world: KafkaWorld) -> dict[str, Any]:
    """The last decision replay publishes per subject (`decision`)."""
    out = io.BytesIO()
    Replayer(world.settings(http_port=0), out, warn=pytest.fail).run(
        orjson.dumps({"topic": topic, "key": key, "value": value}) for topic, key, value in lines
    )
    found = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return {r["key"]: decision(r["value"]) for r in found if r["topic"] == world.topics.decisions and r["value"]}


def last_decisions(records: Sequence[Record]) -> dict[str, Any]:
    return {r.key.decode(): decision(orjson.loads(r.value)) for r in records if r.key and r.value is not None}


def assert_on_their_keys_partitions(records: Sequence[Record], partitions: int = PARTITIONS) -> None:
    """0 decisions written on a partition other than their key's."""
    elsewhere = [(r.key, r.partition) for r in records if r.partition != partition_of(r.key.decode(), partitions)]
    assert elsewhere == []


def misplaced_count(processor: Processor, topic: str) -> float:
    value = processor.metrics.registry.get_sample_value("placement_misplaced_records_total", {"topic": topic})
    return value or 0.0


async def test_librdkafka_records_are_decided_with_murmur2_and_refused_off_their_partition(
    kafka_bootstrap: str,
) -> None:
    world = KafkaWorld(kafka_bootstrap, partitions=PARTITIONS)
    topics = world.topics
    inventory = base_inventory(world, CLUSTERS)
    right, default = placements(world, "m", 24), placements(world, "d", 24)
    async with running(world.settings()) as processor:
        await world.produce(inventory)
        await inventory_has(processor, list(CLUSTERS))
        murmur2 = {"partitioner": "murmur2_random"}
        arrived = await asyncio.to_thread(produce_with_librdkafka, kafka_bootstrap, right, murmur2)
        assert arrived == {key: partition_of(key, PARTITIONS) for _, key, _ in right}
        arrived = await asyncio.to_thread(produce_with_librdkafka, kafka_bootstrap, default, {})
        misplaced = {key for key, p in arrived.items() if p != partition_of(key, PARTITIONS)}
        assert misplaced, "CRC32 puts some of 24 keys elsewhere than murmur2"
        placed = [item for item in default if item[1] not in misplaced]
        wanted = {key for _, key, _ in right + placed}
        decisions = await world.collect(topics.decisions, lambda r: {x.key.decode() for x in r} >= wanted)
        letters = await world.collect(topics.dead_letter, lambda r: len(r) >= len(misplaced))
        await wait_for(lambda: misplaced_count(processor, topics.submissions) == len(misplaced))

        # the same Placements deleted by a murmur2 producer: none keeps a live decision
        deletions = [(topic, key, deleted(value)) for topic, key, value in default]
        await asyncio.to_thread(produce_with_librdkafka, kafka_bootstrap, deletions, murmur2)
        placed_keys = {key for _, key, _ in placed}
        after = await world.collect(
            topics.decisions, lambda r: placed_keys <= {x.key.decode() for x in r if not x.value}
        )

    assert_on_their_keys_partitions(after)
    latest = {r.key.decode(): r.value for r in after}
    assert [key for _, key, _ in default if latest.get(key) is not None] == [], "a deleted Placement left a decision"
    assert_on_their_keys_partitions(decisions)
    assert set(last_decisions(decisions)) == wanted, "no misplaced subject is decided"
    assert last_decisions(decisions) == replayed(inventory + right + placed, world)
    assert sorted(r.key.decode() for r in letters) == sorted(misplaced)
    for letter in letters:
        headers = {name: value.decode() for name, value in letter.headers}
        key = letter.key.decode()
        assert headers[DLQ + "stage"] == "VALIDATE"
        assert headers[DLQ + "partition"] == str(arrived[key])
        message = headers[DLQ + "exception.message"]
        assert f"belongs on partition {partition_of(key, PARTITIONS)} of {topics.submissions}" in message
        assert f"arrived on partition {arrived[key]}" in message
        assert "partitioner=murmur2_random" in message


GO_EXAMPLE = EXAMPLES / "producers" / "go"


def build_go_example(into: Path) -> Path:
    """`go build` of the example, its modules from the Go module proxy."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    binary = into / "produce"
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO_EXAMPLE, env=env, check=True, timeout=600)
    return binary


async def test_the_go_example_produces_on_the_murmur2_partitions(kafka_bootstrap: str, tmp_path: Path) -> None:
    binary = await asyncio.to_thread(build_go_example, tmp_path)
    world = KafkaWorld(kafka_bootstrap, partitions=PARTITIONS)
    inventory, items = base_inventory(world, CLUSTERS), placements(world, "g", 24)
    stdin = b"".join(orjson.dumps({"topic": t, "key": k, "value": v}) + b"\n" for t, k, v in items)
    async with running(world.settings()) as processor:
        await world.produce(inventory)
        await inventory_has(processor, list(CLUSTERS))
        done = await asyncio.to_thread(
            subprocess.run, [str(binary), "-brokers", kafka_bootstrap], input=stdin, capture_output=True, timeout=120
        )
        assert done.returncode == 0, done.stderr.decode()
        arrived = {key: int(p) for key, p, _ in (line.split("\t") for line in done.stdout.decode().splitlines())}
        wanted = {key for _, key, _ in items}
        decisions = await world.collect(world.topics.decisions, lambda r: {x.key.decode() for x in r} >= wanted)
        assert misplaced_count(processor, world.topics.submissions) == 0

    assert arrived == {key: partition_of(key, PARTITIONS) for key in wanted}
    assert_on_their_keys_partitions(decisions)
    assert last_decisions(decisions) == replayed(inventory + items, world)


async def test_with_two_instances_no_instance_decides_a_subject_of_the_other(kafka_bootstrap: str) -> None:
    """The instance owning the arrival partition of a misplaced record refuses it: the subject stays its owner's,
    and no decision is written into the owner's partition by the other instance."""
    world = KafkaWorld(kafka_bootstrap, partitions=2)
    topics = world.topics
    inventory, items = base_inventory(world, CLUSTERS), placements(world, "t", 16)
    async with running(world.settings()) as one:  # creates the topics
        await world.produce(inventory)
        async with running(world.settings()) as two:
            await wait_for(lambda: one.owned_tasks | two.owned_tasks == {0, 1} and len(one.owned_tasks) == 1)
            await inventory_has(two, list(CLUSTERS))
            arrived = await asyncio.to_thread(produce_with_librdkafka, kafka_bootstrap, items, {})
            misplaced = {key for key, p in arrived.items() if p != partition_of(key, 2)}
            placed = {key for key in arrived if key not in misplaced}
            assert misplaced and placed, "CRC32 and murmur2 agree on some of 16 keys and not on others"
            decisions = await world.collect(topics.decisions, lambda r: {x.key.decode() for x in r} >= placed)
            letters = await world.collect(topics.dead_letter, lambda r: len(r) >= len(misplaced))
            held = {p: set(p.runtime.states if p.runtime else ()) for p in (one, two)}
            owned = {p: p.owned_tasks for p in (one, two)}

    assert {r.key.decode() for r in decisions} == placed
    assert_on_their_keys_partitions(decisions, 2)
    assert sorted(r.key.decode() for r in letters) == sorted(misplaced)
    for processor, keys in held.items():
        assert keys == {key for key in placed if partition_of(key, 2) in owned[processor]}
