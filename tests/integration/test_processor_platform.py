"""The processor end to end on a real Apache Kafka broker: state, dead letters, restart, replay parity."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from kafka_support import (
    EXAMPLES,
    KafkaWorld,
    event,
    http_get,
    parity_inputs,
    published_decisions,
    running,
    values,
    wait_for,
)

from engine.inventory import ObjectKey
from streams.kafka.group_offsets import GROUP_METADATA
from streams.kafka.tasks import TaskProducers, partition_of

pytestmark = pytest.mark.integration


def cluster(name: str, **labels: str) -> dict[str, Any]:
    return event("managedcluster.applied", {"metadata": {"name": name, "labels": labels}})


async def test_inventory_events_become_state(world: KafkaWorld) -> None:
    topics = world.topics
    async with running(world.settings()) as processor:
        await world.produce(
            [
                (topics.cluster_status, "ManagedCluster/c1", cluster("c1", env="prod")),
                (
                    topics.cluster_status,
                    "ManagedClusterSet/prod",
                    event("managedclusterset.applied", {"metadata": {"name": "prod"}}),
                ),
                (
                    topics.taints,
                    "c1",
                    event("cluster.taints.updated", {"cluster": "c1", "taints": [{"key": "k", "effect": "NoSelect"}]}),
                ),
                (topics.cluster_status, "ManagedCluster/c2", cluster("c2")),
                (topics.cluster_status, "ManagedCluster/c2", None),
            ]
        )
        inventory = processor.runtime.inventory  # type: ignore[union-attr]
        await wait_for(lambda: inventory.taints_of("c1") and inventory.cluster_set("prod") is not None)
        await wait_for(lambda: inventory.get(ObjectKey("ManagedCluster", "", "c2")) is None and inventory.version >= 5)
        assert inventory.cluster("c1").metadata.labels == {"env": "prod"}  # type: ignore[union-attr]
        assert [t.key for t in inventory.taints_of("c1")] == ["k"]
        assert inventory.taints_of("c1")[0].time_added is not None


async def test_malformed_record_is_dead_lettered_and_the_next_good_record_is_processed(world: KafkaWorld) -> None:
    topics = world.topics
    placement = {"metadata": {"name": "web", "namespace": "apps"}, "spec": {}}
    async with running(world.settings()) as processor:
        await world.produce(
            [
                (topics.submissions, "Placement/apps/web", b"\xff not json"),
                (topics.submissions, "Placement/apps/web", event("placement.exploded", placement)),
                (topics.submissions, "Placement/apps/web", event("placement.applied", {"metadata": {}})),
                (topics.submissions, "Placement/apps/web", event("placement.applied", placement)),
            ]
        )
        letters = await world.collect(topics.dead_letter, lambda r: len(r) >= 3)
        decisions = await world.collect(topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= 1)
        assert processor.ready
        base = f"http://127.0.0.1:{processor.http_port}"
        assert (await http_get(f"{base}/readyz"))[0] == 200
        status, metrics = await http_get(f"{base}/metrics")
    assert status == 200
    assert f'placement_dead_letters_total{{stage="DECODE",topic="{topics.submissions}"}} 1.0' in metrics
    assert f'placement_dead_letters_total{{stage="VALIDATE",topic="{topics.submissions}"}} 2.0' in metrics
    assert f'placement_records_produced_total{{topic="{topics.dead_letter}"}} 3.0' in metrics
    stages = [dict(r.headers)["__connect.errors.stage"] for r in letters]
    assert stages == [b"DECODE", b"VALIDATE", b"VALIDATE"]
    first = dict(letters[0].headers)
    assert letters[0].value == b"\xff not json" and letters[0].key == b"Placement/apps/web"
    assert first["__connect.errors.topic"].decode() == topics.submissions
    assert first["__connect.errors.exception.class.name"] == b"topics.errors.DecodeError"
    assert {"__connect.errors.partition", "__connect.errors.offset", "__connect.errors.exception.message"} <= set(first)
    assert b"unknown event type" in dict(letters[1].headers)["__connect.errors.exception.message"]
    decided = values(decisions, "placement.decided.v1")[0]
    assert decided["subject"] == "Placement/apps/web" and decided["data"]["name"] == "web"


async def test_state_comes_back_from_kafka_after_a_kill(world: KafkaWorld, tmp_path: Any) -> None:
    topics = world.topics
    env = {**os.environ, **world.env(PLACEMENT_QUEUE_CONFIG=str(EXAMPLES / "queues.yaml"))}
    first = subprocess.Popen([sys.executable, "-m", "streams", "run"], env=env, cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        await world.produce(
            [
                (topics.cluster_status, "ManagedCluster/c1", cluster("c1")),
                (
                    topics.submissions,
                    "Placement/apps/web",
                    event("placement.applied", {"metadata": {"name": "web", "namespace": "apps"}}),
                ),
                (
                    topics.submissions,
                    "Application/default",
                    event("application.submitted", {"applicationId": "a1", "user": "carol", "groups": ["dev"]}),
                ),
            ]
        )
        before = await world.collect(
            topics.decisions,
            lambda r: values(r, "placement.decided.v1") and values(r, "application.placed.v1"),
            timeout=60,
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    placed = values(before, "application.placed.v1")[0]["data"]
    assert placed["queue"] == "root.users.carol" and placed["created"] is True
    assert not any(tmp_path.iterdir()), "the processor must keep nothing on local disk"

    settings = world.settings(queue_config=EXAMPLES / "queues.yaml")
    async with running(settings) as second:
        runtime = second.runtime
        assert runtime is not None
        assert {"Placement/apps/web", "Application/default"} <= set(runtime.states)
        assert runtime.states["Placement/apps/web"].published is not None, "its decision entry must be restored"
        await world.produce(
            [
                (
                    topics.submissions,
                    "Application/default",
                    event("application.submitted", {"applicationId": "a2", "user": "carol", "groups": ["dev"]}),
                )
            ]
        )
        after = await world.collect(topics.decisions, lambda r: len(values(r, "application.placed.v1")) >= 2)
    second_placed = values(after, "application.placed.v1")[1]["data"]
    assert second_placed["queue"] == "root.users.carol"
    assert second_placed["created"] is False, "the dynamic queue must have been restored"
    assert len(values(after, "placement.decided.v1")) == 1, "an unchanged decision is not published again"


async def test_sigterm_commits_the_batch_and_leaves_the_group(world: KafkaWorld, tmp_path: Any) -> None:
    topics = world.topics
    env = {**os.environ, **world.env(PLACEMENT_HTTP_PORT="0")}
    log_path = tmp_path.parent / f"{tmp_path.name}.log"  # the processor's cwd stays empty
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streams", "run"], env=env, cwd=tmp_path, stderr=log)
    try:
        placements = [
            (
                topics.submissions,
                f"Placement/apps/p{i}",
                event("placement.applied", {"metadata": {"name": f"p{i}", "namespace": "apps"}}),
            )
            for i in range(20)
        ]
        await world.produce(placements)
        await world.collect(topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= 20, timeout=60)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 30)
        stopped_in = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr = log_path.read_text()
    assert code == 0, stderr[-2000:]
    assert stopped_in < 10, "graceful stop must not wait for a session timeout"
    assert await world.group_state() == ("Empty", 0), "the instance left the group instead of timing out"
    committed = await world.committed_offsets(topics.submissions)
    assert sum(committed.values()) == 20, "every consumed submission is committed before leaving"


async def test_replay_and_kafka_publish_the_same_decisions(world: KafkaWorld) -> None:
    topics = world.topics
    lines, expected = parity_inputs()
    names = world.example_topics()
    async with running(world.settings(queue_config=EXAMPLES / "queues.yaml")) as processor:
        for topic, key, value in lines:  # one record per batch, as replay does
            done = processor.records_done
            await world.produce([(names[topic], key, value)])
            await wait_for(lambda d=done: processor.records_done > d)
        records = await world.collect(topics.decisions, lambda r: len(r) >= len(expected))
    assert published_decisions(records) == expected


async def test_fenced_task_transaction_is_aborted_and_its_batch_committed_once(world: KafkaWorld) -> None:
    topics = world.topics

    def applied(name: str) -> tuple[str, str, dict[str, Any]]:
        placement = {"metadata": {"name": name, "namespace": "apps"}}
        return topics.submissions, f"Placement/apps/{name}", event("placement.applied", placement)

    def decided(records: list[Any], name: str) -> list[dict[str, Any]]:
        return [v for v in values(records, "placement.decided.v1") if v["data"]["name"] == name]

    async with running(world.settings()) as processor:
        await world.produce([(topics.cluster_status, "ManagedCluster/c1", cluster("c1")), applied("web")])
        await world.collect(topics.decisions, lambda r: bool(decided(r, "web")))
        task = partition_of("Placement/apps/db", world.partitions)
        # a zombie with the task's transactional id bumps the epoch: the processor's producer is fenced
        zombie = AIOKafkaProducer(
            bootstrap_servers=world.bootstrap,
            transactional_id=TaskProducers(world.settings().kafka).transactional_id(task),
        )
        await zombie.start()
        # its producer id is fetched in the background: hold it before "db" is sent, so the processor's
        # transaction for "db" is fenced
        async with zombie.transaction():
            pass
        try:
            await world.produce([applied("db")])
            records = await world.collect(topics.decisions, lambda r: bool(decided(r, "db")), timeout=60)
        finally:
            await zombie.stop()
        aborted = processor.metrics.registry.get_sample_value("placement_transactions_total", {"outcome": "aborted"})
        assert processor.ready
    # one abort, or two when the zombie's init met an open transaction of the task: the coordinator then
    # aborts it (a bump) and answers the zombie's retry with another bump, which can fence the restarted producer
    assert aborted is not None and aborted >= 1
    assert len(decided(records, "db")) == 1, "the aborted attempt is invisible to read_committed readers"
    assert (await world.committed_offsets(topics.submissions))[task] >= 1


async def test_an_idle_processor_brings_the_groups_offsets_up_to_date(world: KafkaWorld) -> None:
    """Transactions commit the group's offsets once per interval; what the last ones consumed reaches the group
    while nothing more comes, so monitoring sees no lag that is not there."""
    topics = world.topics
    settings = world.settings(queue_config=EXAMPLES / "queues.yaml", kafka={"group_offsets_interval_ms": 300})

    def submitted(app: str, partition: str) -> tuple[str, str, dict[str, Any]]:
        data = {"applicationId": app, "user": "alice", "groups": ["dev"], "queue": "root.analytics"}
        return topics.submissions, f"Application/{partition}", event("application.submitted", data)

    def decided(records: list[Any]) -> int:  # placed in `default`, rejected in partitions with no queues
        return sum(len(values(records, kind)) for kind in ("application.placed.v1", "application.rejected.v1"))

    submissions = [submitted(f"app-{i}", f"p{i % 4}") for i in range(40)]
    async with running(settings):
        await world.produce(submissions[:20])
        await world.collect(topics.decisions, lambda r: decided(r) >= 20)
        await world.produce(submissions[20:])  # within the interval of the first batches' group commits
        await world.collect(topics.decisions, lambda r: decided(r) >= 40)
        ends = await world.end_offsets(topics.submissions)

        expected = {p: end for p, end in ends.items() if end}
        committed = await world.committed_offsets(topics.submissions)
        for _ in range(100):
            if committed == expected:
                break
            await asyncio.sleep(0.1)
            committed = await world.committed_offsets(topics.submissions)
        assert committed == expected, "the group's offsets reach the ends while the processor is idle"


async def test_a_new_owner_starts_after_the_last_transaction_when_the_group_offset_lags(world: KafkaWorld) -> None:
    """The broker applies a transaction's offsets to the group a moment after the transaction completes; the
    offsets the task's transaction also recorded in its changelog partition keep that batch from running twice.
    The lag is made lasting here: the group's offset is put back to the start while no member is active, with
    the metadata the processor commits with (without it, it would be an operator's reset, which is honoured:
    test_group_offsets.py)."""
    topics = world.topics
    settings = world.settings(queue_config=EXAMPLES / "queues.yaml")

    def submitted(app: str) -> tuple[str, str, dict[str, Any]]:
        data = {"applicationId": app, "user": "alice", "groups": ["dev"], "queue": "root.analytics"}
        return topics.submissions, "Application/default", event("application.submitted", data)

    def decided(records: list[Any]) -> list[str]:
        kinds = ("application.placed.v1", "application.rejected.v1")
        return [v["data"]["applicationId"] for kind in kinds for v in values(records, kind)]

    async with running(settings):
        await world.produce([submitted(f"app-{i}") for i in range(3)])
        await world.collect(topics.decisions, lambda r: len(decided(r)) == 3)
    task = partition_of("Application/default", world.partitions)
    tp = TopicPartition(topics.submissions, task)
    rewinder = AIOKafkaConsumer(bootstrap_servers=world.bootstrap, group_id=world.group, enable_auto_commit=False)
    await rewinder.start()
    try:
        rewinder.assign([tp])
        await rewinder.commit({tp: (0, GROUP_METADATA)})
    finally:
        await rewinder.stop()
    assert (await world.committed_offsets(topics.submissions))[task] == 0
    async with running(settings):
        await world.produce([submitted("app-3")])
        records = await world.collect(topics.decisions, lambda r: "app-3" in decided(r))
    assert sorted(decided(records)) == ["app-0", "app-1", "app-2", "app-3"]


async def test_a_running_processor_hands_the_engine_thread_over_at_its_switch_interval(world: KafkaWorld) -> None:
    before = sys.getswitchinterval()
    try:
        async with running(world.settings(switch_interval_ms=2.0)):
            assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
