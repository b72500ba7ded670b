"""`placement-stream repartition` on a real broker: the state moves into topics of another partition count and
a processor goes on from it, deciding nothing twice; it refuses while records are unprocessed or a processor runs."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from kafka_support import KafkaWorld, event, running, values
from test_topic_changes import decide, placements

from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from streams.repartition import RepartitionError, moved_names, repartition

pytestmark = pytest.mark.integration


async def test_the_state_moves_to_three_partitions_and_nothing_is_decided_twice(world: KafkaWorld) -> None:
    await decide(world, 12)
    said: list[str] = []
    target = await repartition(world.settings(), 3, "-p3", said.append)
    assert said == ["copied 24 changelog entries and 12 decisions into 3 partitions"]
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


async def test_it_refuses_while_records_are_unprocessed_or_a_processor_runs(world: KafkaWorld) -> None:
    await decide(world, 2)
    await world.produce(placements(world, 1, start=2))
    with pytest.raises(RepartitionError, match="1 subject records are not processed yet"):
        await repartition(world.settings(), 3, "-p3", print)
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
    assert "copied 0 changelog entries and 0 decisions into 4 partitions" in result.stderr
