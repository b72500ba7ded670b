"""The consumer group's offsets on a real broker: brought up to date by a graceful stop and hand-over, so a reader
of the group's offsets alone (what a release before the task offsets records does) loses and repeats nothing, and
an operator's reset with Kafka's own tool honoured."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from kafka_support import KafkaWorld, Record, admin_client, event, running, values, wait_for
from kafka_tools import reset_offsets_to_earliest

from streams.kafka.admin import create_topics
from streams.kafka.group_offsets import GROUP_METADATA
from streams.kafka.tasks import partition_of
from streams.service import Processor

pytestmark = pytest.mark.integration

SLOW_GROUP = {"group_offsets_interval_ms": 600_000}
"""The group's offsets come only with each task's first transaction and what this change adds."""


def _placement(name: str) -> dict[str, Any]:
    return event("placement.applied", {"metadata": {"name": name, "namespace": "apps"}, "spec": {}})


def _cluster_set(world: KafkaWorld) -> list[tuple[str, str, dict[str, Any]]]:
    labels = {"cluster.open-cluster-management.io/clusterset": "prod"}
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    cluster = event("managedcluster.applied", {"metadata": {"name": "c1", "labels": labels}})
    topic = world.topics.cluster_status
    return [
        (topic, "ManagedClusterSet/prod", event("managedclusterset.applied", {"metadata": {"name": "prod"}})),
        (topic, "ManagedClusterSetBinding/apps/prod", event("managedclustersetbinding.applied", binding)),
        (topic, "ManagedCluster/c1", cluster),
    ]


async def _placements(world: KafkaWorld, names: list[str]) -> None:
    await world.produce([(world.topics.submissions, f"Placement/apps/{n}", _placement(n)) for n in names])


def _decided(records: list[Record]) -> Counter[str]:
    return Counter(v["subject"] for v in values(records, "placement.decided.v1"))


async def _decisions(world: KafkaWorld, names: list[str]) -> Counter[str]:
    wanted = {f"Placement/apps/{n}" for n in names}
    return _decided(await world.collect(world.topics.decisions, lambda r: wanted <= set(_decided(r))))


async def _every_records(world: KafkaWorld) -> list[Record]:
    """The records of the whole decisions topic, read to its last stable offset."""
    topic = world.topics.decisions
    ends = await world.end_offsets(topic, isolation="read_committed")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=world.bootstrap, group_id=None, enable_auto_commit=False, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in ends]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        records: list[Record] = []
        while [tp for tp in partitions if await consumer.position(tp) < ends[tp.partition]]:
            for chunk in (await consumer.getmany(timeout_ms=200)).values():
                records += chunk
    finally:
        await consumer.stop()
    return records


async def _group_offsets(world: KafkaWorld, topic: str) -> dict[int, tuple[int, str]]:
    async with admin_client(world.bootstrap) as admin:
        offsets = await admin.list_consumer_group_offsets(world.group)
    return {tp.partition: (meta.offset, meta.metadata) for tp, meta in offsets.items() if tp.topic == topic}


def _consumed(processor: Processor, topic: str) -> float:
    value = processor.metrics.registry.get_sample_value("placement_records_consumed_total", {"topic": topic})
    return float(value or 0)


async def test_a_graceful_stop_leaves_the_groups_offsets_at_the_end_of_what_was_processed(world: KafkaWorld) -> None:
    """Only each task's first transaction commits the group's offsets here; the stop brings them up to the rest."""
    topics = world.topics
    names = [f"p{i:02}" for i in range(40)]
    async with running(world.settings(kafka=SLOW_GROUP)):
        await world.produce(_cluster_set(world))
        for wave in (names[:10], names[10:]):  # the second wave's transactions do not commit the group's offsets
            await _placements(world, wave)
            await _decisions(world, wave)
    ends = await world.end_offsets(topics.submissions)
    assert await _group_offsets(world, topics.submissions) == {p: (end, GROUP_METADATA) for p, end in ends.items()}


QUEUES = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: dev
"""


def _application(world: KafkaWorld, kind: str, app: str) -> tuple[str, str, dict[str, Any]]:
    data: dict[str, Any] = {"applicationId": app, "partition": "default"}
    if kind == "application.submitted":
        data |= {"user": "alice", "groups": [], "queue": "root.dev", "tags": {}}
    return world.topics.submissions, "Application/default", event(kind, data)


def _placed(records: list[Record]) -> Counter[tuple[str, str]]:
    return Counter((v["data"]["applicationId"], v["data"]["queue"]) for v in values(records, "application.placed.v1"))


async def test_an_operators_reset_to_earliest_is_honoured(world: KafkaWorld, tmp_path: Path) -> None:
    """kafka-consumer-groups --reset-offsets --to-earliest while stopped: every record is read again, against the
    restored state, which already holds them (docs/operations.md): no Placement gets a second decision (its
    answer is unchanged), each YuniKorn submission is answered again (a2 is placed again and removed again by
    its completion), what was produced while stopped is decided once, and the group's offsets reach the end."""
    topics = world.topics
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES)
    settings = world.settings(queue_config=queues)
    before, after = [f"p{i:02}" for i in range(20)], [f"q{i:02}" for i in range(6)]
    apps = [("application.submitted", "a1"), ("application.submitted", "a2"), ("application.completed", "a2")]
    async with running(settings):
        await world.produce(_cluster_set(world))
        await _placements(world, before)
        await world.produce([_application(world, kind, app) for kind, app in apps])
        await _decisions(world, before)
        await world.collect(topics.decisions, lambda r: sum(_placed(r).values()) == 2)
    printed = await reset_offsets_to_earliest(world.bootstrap, world.group, topics.submissions)
    assert await _group_offsets(world, topics.submissions) == dict.fromkeys(range(world.partitions), (0, "")), printed
    await _placements(world, after)
    await world.produce([_application(world, "application.submitted", "a3")])
    async with running(settings) as processor:
        await _decisions(world, before + after)
        ends = await world.end_offsets(topics.submissions)
        await wait_for(lambda: _consumed(processor, topics.submissions) >= sum(ends.values()))
        await asyncio.sleep(1.5)  # a second's group commit, and any decision of a record read again, would be out
        consumed = _consumed(processor, topics.submissions)
        group = await _group_offsets(world, topics.submissions)
        runtime = processor.runtime
        assert runtime is not None
        running_apps = set(runtime.states["Application/default"].applications)
    decisions = await _every_records(world)
    assert consumed == sum(ends.values()) == len(before) + len(after) + len(apps) + 1, "every record read again"
    assert _decided(decisions) == Counter({f"Placement/apps/{n}": 1 for n in before + after}), "0 lost, 0 twice"
    assert _placed(decisions) == Counter({("a1", "root.dev"): 2, ("a2", "root.dev"): 2, ("a3", "root.dev"): 1})
    assert running_apps == {"a1", "a3"}
    assert group == {p: (end, GROUP_METADATA) for p, end in ends.items()}, "the group's offsets at the end again"


async def _legacy_reader(world: KafkaWorld) -> AIOKafkaConsumer:
    """A member of the group that starts from the group's committed offsets alone, as a release before the task
    offsets records does (same topics and assignor as the processor)."""
    consumer = AIOKafkaConsumer(
        world.topics.submissions,
        world.topics.advisor_recommendations,
        bootstrap_servers=world.bootstrap,
        group_id=world.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        partition_assignment_strategy=(RangePartitionAssignor,),
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    await consumer.start()
    return consumer


async def test_a_graceful_hand_over_to_a_reader_of_the_groups_offsets_repeats_and_loses_nothing(
    world: KafkaWorld,
) -> None:
    topics = world.topics
    settings = world.settings(kafka=SLOW_GROUP)
    await create_topics(settings)
    names = [f"p{i:02}" for i in range(40)]
    async with running(settings) as processor:
        await world.produce(_cluster_set(world))
        for wave in (names[:10], names[10:]):
            await _placements(world, wave)
            await _decisions(world, wave)
        processed = await world.end_offsets(topics.submissions)
        reader = await _legacy_reader(world)
        try:
            await wait_for(lambda: len(processor.owned_tasks) == 1 and bool(reader.assignment()))
            (moved,) = {tp.partition for tp in reader.assignment()}
            assert processor.owned_tasks == {1 - moved}
            later = [f"q{i:02}" for i in range(20)]
            await _placements(world, later)
            ends = await world.end_offsets(topics.submissions)
            read: list[Record] = []
            submissions = TopicPartition(topics.submissions, moved)
            while len(read) < ends[moved] - processed[moved]:
                batch = await reader.getmany(submissions, timeout_ms=500)
                read += batch.get(submissions, [])
            await asyncio.sleep(0.5)
            read += (await reader.getmany(submissions, timeout_ms=200)).get(submissions, [])
        finally:
            await reader.stop()
    assert [r.offset for r in read] == list(range(processed[moved], ends[moved])), "nothing again, nothing lost"
    assert read, "the moved task got records after the hand-over"
    kept = [n for n in later if partition_of(f"Placement/apps/{n}", world.partitions) != moved]
    assert _decided(await _every_records(world)) == Counter({f"Placement/apps/{n}": 1 for n in names + kept}), (
        "each subject decided once before the hand-over, then the kept task's alone"
    )


async def test_after_a_crash_an_idle_new_owner_brings_the_groups_offsets_up_to_date(world: KafkaWorld) -> None:
    """An instance that ends without its stop's commit (its run cancelled) leaves the group's offsets at its
    first transactions'; the next owner starts at the recorded ones and, with nothing to process, commits them
    to the group: lag tools and the processor agree again."""
    topics = world.topics
    settings = world.settings(kafka=SLOW_GROUP)
    names = [f"p{i:02}" for i in range(30)]
    crashed = Processor(settings)
    run = asyncio.create_task(crashed.run())
    try:
        await wait_for(lambda: crashed.ready, timeout=60)
        await world.produce(_cluster_set(world))
        for wave in (names[:10], names[10:]):
            await _placements(world, wave)
            await _decisions(world, wave)
    finally:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
    ends = await world.end_offsets(topics.submissions)
    assert await _group_offsets(world, topics.submissions) != {p: (e, GROUP_METADATA) for p, e in ends.items()}
    async with running(settings) as processor:
        await wait_for(lambda: processor.owned_tasks == set(range(world.partitions)))
        expected = {p: (end, GROUP_METADATA) for p, end in ends.items()}
        group: dict[int, tuple[int, str]] = {}
        for _ in range(100):
            group = await _group_offsets(world, topics.submissions)
            if group == expected:
                break
            await asyncio.sleep(0.1)
        consumed = _consumed(processor, topics.submissions)
    assert group == expected
    assert consumed == 0, "nothing read again"
    assert _decided(await _every_records(world)) == Counter({f"Placement/apps/{n}": 1 for n in names})
