"""Topics changed under the processor on a real broker (platform P14): partitions added, topics deleted or
re-created, a cleanup policy that drops state. Each ends with one clear error and `/readyz` false, or a refused
start, never with silent decisions from lost or misplaced state."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import NewPartitions, NewTopic
from kafka_support import KafkaWorld, admin_client, event, http_get, running, values, wait_for

from streams.kafka.tasks import partition_of
from streams.kafka.topic_checks import SAMPLE_RECORDS
from streams.service import Processor
from streams.settings import Settings
from topics.names import TOPIC_SPECS

pytestmark = pytest.mark.integration

UNKNOWN_TOPIC = 3


def co_partitioned(world: KafkaWorld) -> list[str]:
    return [world.topics.name(role) for role, spec in TOPIC_SPECS.items() if spec.co_partitioned]


def placements(world: KafkaWorld, count: int, start: int = 0) -> list[tuple[str, str, object]]:
    return [
        (
            world.topics.submissions,
            f"Placement/apps/p{i}",
            event("placement.applied", {"metadata": {"name": f"p{i}", "namespace": "apps"}}),
        )
        for i in range(start, start + count)
    ]


async def decide(world: KafkaWorld, count: int) -> None:
    """Run a processor until `count` placements are decided, then stop it (gracefully)."""
    async with running(world.settings()):
        await world.produce(placements(world, count))
        await world.collect(world.topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= count)


@asynccontextmanager
async def refused(settings: Settings) -> AsyncIterator[Processor]:
    """A processor whose start is refused: it stays up, not ready, with the reason in `health.refusal`."""
    processor = Processor(settings)
    task = asyncio.create_task(processor.run())
    try:
        await wait_for(lambda: processor.health.refusal is not None or task.done(), timeout=60)
        if task.done():
            task.result()
        yield processor
    finally:
        processor.request_stop()
        await asyncio.wait_for(task, 30)


async def probes(processor: Processor) -> tuple[int, int]:
    base = f"http://127.0.0.1:{processor.http_port}"
    return (await http_get(f"{base}/readyz"))[0], (await http_get(f"{base}/livez"))[0]


def errors_naming(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and text in r.getMessage()]


async def topic_exists(world: KafkaWorld, name: str) -> bool:
    async with admin_client(world.bootstrap) as admin:
        described = await admin.describe_topics([name])
    return described[0].get("error_code", 0) != UNKNOWN_TOPIC


async def delete_topic(world: KafkaWorld, name: str) -> None:
    async with admin_client(world.bootstrap) as admin:
        await admin.delete_topics([name])
    for _ in range(100):
        if not await topic_exists(world, name):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} was not deleted")


async def create_topic(world: KafkaWorld, name: str, partitions: int, policy: str) -> None:
    async with admin_client(world.bootstrap) as admin:
        for _ in range(50):  # a topic just deleted may still be going away
            response = await admin.create_topics([NewTopic(name, partitions, 1, None, {"cleanup.policy": policy})])
            if response.topic_errors[0][1] == 0:
                return
            await asyncio.sleep(0.2)
    raise AssertionError(f"could not create {name}: {response.topic_errors}")


async def test_partitions_added_while_running_stop_the_tasks_once_and_a_restart_is_refused(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    topics = world.topics
    async with running(world.settings()) as processor:
        await world.produce(placements(world, 4))
        await world.collect(topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= 4)
        async with admin_client(world.bootstrap) as admin:
            await admin.create_partitions({topics.submissions: NewPartitions(3)})
        await wait_for(lambda: processor.health.refusal is not None, timeout=20)
        assert await probes(processor) == (503, 200), "not ready, yet alive: a restart is refused the same way"
        for _ in range(100):  # every task stopped: the instance left the group
            if await world.group_state() == ("Empty", 0):
                break
            await asyncio.sleep(0.1)
        assert await world.group_state() == ("Empty", 0)
        await asyncio.sleep(2)  # the watch has ended: nothing more is said
    said = errors_naming(caplog, "partition count changed")
    assert len(said) == 1, said
    assert f"{topics.submissions} 2 -> 3" in said[0] and "docs/operations.md" in said[0]

    async with refused(world.settings()) as again:
        assert "co-partitioned topics must have equal partition counts" in (again.health.refusal or "")
        assert await probes(again) == (503, 200)
        assert not again.owned_tasks


async def test_all_co_partitioned_topics_altered_while_stopped_are_refused_at_start(world: KafkaWorld) -> None:
    await decide(world, 12)
    async with admin_client(world.bootstrap) as admin:
        await admin.create_partitions({name: NewPartitions(3) for name in co_partitioned(world)})
    async with refused(world.settings()) as processor:
        reason = processor.health.refusal or ""
        assert f"the state in {world.topics.changelog} was built with 2 partitions" in reason, reason
        assert await probes(processor) == (503, 200)
        assert not processor.owned_tasks
    before = await world.end_offsets(world.topics.decisions, 3)
    assert before[2] == 0, "nothing was decided on the new partition"


@pytest.mark.parametrize("role", ["decisions", "changelog"])
async def test_a_state_topic_deleted_while_running_is_named_within_seconds_and_not_recreated(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture, role: str
) -> None:
    name = world.topics.name(next(r for r in TOPIC_SPECS if r.value == role))
    async with running(world.settings()) as processor:
        await world.produce(placements(world, 4))
        await world.collect(world.topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= 4)
        await delete_topic(world, name)
        deleted = time.monotonic()
        await wait_for(lambda: processor.health.refusal is not None, timeout=20)  # a bound for a loaded machine
        print(f"{role} deleted: refused after {time.monotonic() - deleted:.1f} s")
        assert await probes(processor) == (503, 200)
        await world.produce(placements(world, 2, start=4))
        await asyncio.sleep(2)
    said = errors_naming(caplog, "topic deleted")
    assert len(said) == 1 and name in said[0], said
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR], "no traceback"

    async with refused(world.settings()) as again:
        reason = again.health.refusal or ""
        assert f"topic {name} does not exist while the consumer group" in reason, reason
        assert await probes(again) == (503, 200)
    assert not await topic_exists(world, name), "an empty one would start from nothing"


@pytest.mark.parametrize("role", ["changelog", "decisions"])
async def test_a_state_topic_recreated_empty_while_stopped_is_refused_unless_the_reset_is_said(
    world: KafkaWorld, role: str
) -> None:
    name = world.topics.name(next(r for r in TOPIC_SPECS if r.value == role))
    await decide(world, 6)
    await delete_topic(world, name)
    await create_topic(world, name, world.partitions, "compact")
    async with refused(world.settings()) as processor:
        reason = processor.health.refusal or ""
        assert f"{name} is empty in partitions" in reason, reason
        assert "PLACEMENT_ACCEPT_EMPTY_STATE" in reason
        assert await probes(processor) == (503, 200)
    async with running(world.settings(accept_empty_state=True)) as processor:
        assert processor.ready, "the operator said the state was reset"


@pytest.mark.parametrize("role", ["changelog", "decisions"])
async def test_a_state_topic_created_with_cleanup_policy_delete_is_refused(world: KafkaWorld, role: str) -> None:
    name = world.topics.name(next(r for r in TOPIC_SPECS if r.value == role))
    await create_topic(world, name, world.partitions, "delete")
    async with refused(world.settings()) as processor:
        reason = processor.health.refusal or ""
        assert f"topic {name} has cleanup.policy=delete" in reason, reason
        assert "--add-config cleanup.policy=compact" in reason
        assert await probes(processor) == (503, 200)


async def test_decisions_placed_by_another_count_are_refused_without_markers(world: KafkaWorld) -> None:
    """A decisions topic written with 2 partitions (by hand, or before the changelog recorded its count), now
    with 3: its keys' placement shows it."""
    topics = world.topics
    async with admin_client(world.bootstrap) as admin:
        for name in co_partitioned(world):
            policy = next(s.cleanup_policy for r, s in TOPIC_SPECS.items() if world.topics.name(r) == name)
            await admin.create_topics([NewTopic(name, 2, 1, None, {"cleanup.policy": policy})])
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap)
    await producer.start()
    try:
        for i in range(20):
            key = f"Placement/apps/p{i}"
            await producer.send_and_wait(topics.decisions, b"{}", key=key.encode(), partition=partition_of(key, 2))
    finally:
        await producer.stop()
    async with admin_client(world.bootstrap) as admin:
        await admin.create_partitions({name: NewPartitions(3) for name in co_partitioned(world)})
    async with refused(world.settings()) as processor:
        reason = processor.health.refusal or ""
        assert f"{topics.decisions} hold keys placed for another partition count" in reason, reason
        assert "the keys seen fit 2" in reason
        assert await probes(processor) == (503, 200)
    assert await world.end_offsets(topics.changelog, 3) == {0: 0, 1: 0, 2: 0}, "no marker for a refused count"


async def test_a_stray_subject_found_by_the_restore_stops_the_tasks(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture
) -> None:
    """A changelog entry in another task's partition, where the start check's head and tail reads do not look:
    the restore finds it (its subject hashes elsewhere) and refuses the same way."""
    topics = world.topics
    await decide(world, 40)
    entries = [r for r in await world.collect(topics.changelog, lambda r: len(r) >= 80) if r.key and r.value]
    own = [r for r in entries if r.partition == 0 and not r.key.startswith(b"~")]
    stray = next(
        r for r in entries if r.partition == 1 and r.key.startswith(b"Placement/") and b"/decision" not in r.key
    )
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap)
    await producer.start()
    try:
        rewrites = [own[i % len(own)] for i in range(SAMPLE_RECORDS)]  # the same entries again: no change
        for record in [*rewrites, stray, *rewrites]:
            await producer.send_and_wait(topics.changelog, record.value, key=record.key, partition=0)
    finally:
        await producer.stop()
    processor = Processor(world.settings())
    task = asyncio.create_task(processor.run())
    try:
        await wait_for(lambda: processor.health.refusal is not None, timeout=60)
        reason = processor.health.refusal or ""
        assert f"partition 0 of {topics.changelog} holds 1 subjects" in reason, reason
        assert stray.key.decode() in reason
        assert await probes(processor) == (503, 200)
    finally:
        processor.request_stop()
        await asyncio.wait_for(task, 30)
    assert len(errors_naming(caplog, "holds 1 subjects")) == 1
