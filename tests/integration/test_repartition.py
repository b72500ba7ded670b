"""`placement-stream repartition` on a real broker: the state moves into topics of another partition count and
a processor goes on from it, deciding nothing twice; it refuses while records are unprocessed or a processor runs."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from aiokafka.admin import NewPartitions
from kafka_support import KafkaWorld, admin_client, event, running, values, wait_for
from test_topic_changes import decide, placements

from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from streams.repartition import RepartitionError, moved_names, repartition
from streams.settings import TopicNames

pytestmark = pytest.mark.integration


async def test_the_state_moves_to_three_partitions_and_nothing_is_decided_twice(world: KafkaWorld) -> None:
    await decide(world, 12)
    said: list[str] = []
    target = await repartition(world.settings(), 3, "-p3", said.append)
    assert said == ["copied 24 changelog entries, 12 decisions and 0 unprocessed subject records into 3 partitions"]
    assert target == moved_names(world.topics, "-p3") and target.cluster_status == world.topics.cluster_status

    world.topics, world.partitions = target, 3
    async with running(world.settings()) as processor:
        runtime = processor.runtime
        assert runtime is not None
        assert {f"Placement/apps/p{i}" for i in range(12)} <= set(runtime.states)
        assert all(runtime.states[f"Placement/apps/p{i}"].published is not None for i in range(12))
        deleted = event("placement.deleted", {"metadata": {"name": "p0", "namespace": "apps"}})
        await world.produce([*placements(world, 1, start=12), (target.submissions, "Placement/apps/p0", deleted)])
        records = await world.collect(
            target.decisions,
            lambda r: len(values(r, "placement.decided.v1")) >= 14 and any(x.value is None for x in r),
        )
    decided = values(records, "placement.decided.v1")
    subjects = [d["subject"] for d in decided]
    assert sorted(subjects) == sorted([f"Placement/apps/p{i}" for i in range(13)] + ["Placement/apps/p0"]), (
        "the copied decisions, the new placement and the deletion; nothing decided again"
    )
    assert all(r.partition == partition_of(r.key.decode(), 3) for r in records if r.key is not None)
    changelog = await world.collect(target.changelog, lambda r: len(r) >= 3)
    assert {r.key for r in changelog if r.offset == 0} == {b"~task-offsets/~partitions/3"}


async def decided_on_new_topics(world: KafkaWorld, target: TopicNames, expected: list[str]) -> list[str]:
    """Run a processor on the repartitioned topics until `expected` decisions (and a tombstone, if one is
    expected) are on the new decisions topic; the subjects of its decisions, sorted."""
    world.topics, world.partitions = target, 3
    tombstone = len(set(expected)) < len(expected)
    async with running(world.settings()):
        records = await world.collect(
            target.decisions,
            lambda r: (
                len(values(r, "placement.decided.v1")) >= len(expected)
                and (not tombstone or any(x.value is None for x in r))
            ),
        )
    assert all(r.partition == partition_of(r.key.decode(), 3) for r in records if r.key is not None)
    return sorted(d["subject"] for d in values(records, "placement.decided.v1"))


async def test_records_not_processed_yet_are_copied_and_decided_once(world: KafkaWorld) -> None:
    await decide(world, 2)
    await world.produce(placements(world, 1, start=2))
    target = await repartition(world.settings(), 3, "-p3", print)
    assert await decided_on_new_topics(world, target, [f"Placement/apps/p{i}" for i in range(3)]) == [
        f"Placement/apps/p{i}" for i in range(3)
    ]


async def test_partitions_added_while_running_then_repartitioned_lose_and_repeat_nothing(world: KafkaWorld) -> None:
    async with running(world.settings()) as processor:
        await world.produce(placements(world, 8))
        await world.collect(world.topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= 8)
        async with admin_client(world.bootstrap) as admin:
            await admin.create_partitions({world.topics.submissions: NewPartitions(3)})
        await wait_for(lambda: processor.health.refusal is not None, timeout=20)
        deleted = event("placement.deleted", {"metadata": {"name": "p1", "namespace": "apps"}})
        # a new producer places by 3 partitions: some subjects now arrive on partition 2, some elsewhere
        await world.produce([*placements(world, 8, start=8), (world.topics.submissions, "Placement/apps/p1", deleted)])
    target = await repartition(world.settings(), 3, "-p3", print)
    expected = [f"Placement/apps/p{i}" for i in range(16)] + ["Placement/apps/p1"]
    assert await decided_on_new_topics(world, target, expected) == sorted(expected), (
        "each placement decided once, the deletion after its placement; nothing re-decided"
    )


async def test_it_refuses_while_a_processor_runs(world: KafkaWorld) -> None:
    async with running(world.settings()):
        with pytest.raises(RepartitionError, match="stop every processor first"):
            await repartition(world.settings(), 3, "-p3", print)


async def test_the_command_prints_the_settings_of_the_new_topics(world: KafkaWorld) -> None:
    await create_topics(world.settings())
    env = world.env()
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "streams", "repartition", "--partitions", "4"],
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "PLACEMENT_KAFKA__TASK_PARTITIONS=4"
    assert f"PLACEMENT_TOPICS__SUBMISSIONS={world.topics.submissions}-p4" in lines
    assert "copied 0 changelog entries, 0 decisions and 0 unprocessed subject records into 4" in result.stderr
