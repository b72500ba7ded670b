"""After a restart, the restored subjects are re-decided a slice per loop turn, on a real broker, and what
arrives meanwhile is decided between the slices instead of after all of them; a cold start, whose tasks are
restored empty, re-decides nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kafka_support import KafkaWorld, event, running, values, wait_for

from streams.kafka.admin import create_topics

pytestmark = pytest.mark.integration

PLACEMENTS = 60
SLICE = 2


def _placement(name: str) -> dict[str, Any]:
    return event("placement.applied", {"metadata": {"name": name, "namespace": "apps"}, "spec": {}})


def _cluster(name: str) -> dict[str, Any]:
    labels = {"cluster.open-cluster-management.io/clusterset": "prod"}
    return event("managedcluster.applied", {"metadata": {"name": name, "labels": labels}})


def _cluster_set(world: KafkaWorld) -> list[tuple[str, str, dict[str, Any]]]:
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    return [
        (
            world.topics.cluster_status,
            "ManagedClusterSet/prod",
            event("managedclusterset.applied", {"metadata": {"name": "prod"}}),
        ),
        (
            world.topics.cluster_status,
            "ManagedClusterSetBinding/apps/prod",
            event("managedclustersetbinding.applied", binding),
        ),
    ]


def _committed(processor: Any) -> float:
    value = processor.metrics.registry.get_sample_value("placement_transactions_total", {"outcome": "committed"})
    return float(value or 0)


async def test_restored_subjects_are_redecided_in_slices_between_batches(world: KafkaWorld) -> None:
    topics = world.topics
    settings = world.settings(kafka={"max_batch_records": SLICE})
    names = [f"p{i:03}" for i in range(PLACEMENTS)]
    async with running(settings):
        await world.produce([*_cluster_set(world), (topics.cluster_status, "ManagedCluster/c1", _cluster("c1"))])
        await world.produce([(topics.submissions, f"Placement/apps/{n}", _placement(n)) for n in names])
        await world.collect(topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= PLACEMENTS)
    # while no instance runs: a new cluster, which every restored decision must take in, and a new Placement
    await world.produce(
        [
            (topics.cluster_status, "ManagedCluster/c2", _cluster("c2")),
            (topics.submissions, "Placement/apps/new", _placement("new")),
        ]
    )
    async with running(settings) as processor:
        runtime = processor.runtime
        assert runtime is not None
        sample = processor.metrics.registry.get_sample_value
        # each task's restore observed, and the gauge covers the whole assignment, not the last task alone
        assert sample("placement_task_restore_seconds_count") == world.partitions
        restored = sample("placement_task_restore_seconds_sum")
        assert restored is not None and 0 < restored <= sample("placement_restore_seconds", {"table": "changelog"})
        # the restore reader is done with what it read: it must not fetch those partitions over and over
        restorer = processor._restorer
        assert restorer is not None and restorer.assignment()
        assert set(restorer.paused()) == restorer.assignment()

        def redecided() -> int:
            return sum(runtime.states[f"Placement/apps/{n}"].published.decided == {"c1", "c2"} for n in names)

        def decided(name: str) -> bool:
            state = runtime.states.get(f"Placement/apps/{name}")
            return state is not None and state.published is not None

        await wait_for(lambda: decided("new"))  # polled at once: before the first slice
        await wait_for(lambda: _committed(processor) >= 2)
        await world.produce([(topics.submissions, "Placement/apps/later", _placement("later"))])
        await wait_for(lambda: decided("later"))
        redecided_when_later_was = redecided()
        await wait_for(lambda: redecided() == PLACEMENTS)
        slices = _committed(processor)
    assert redecided_when_later_was < PLACEMENTS, "a Placement arriving meanwhile waited for every re-decision"
    # each slice commits in its own transactions: at least one per slice, where one batch had one per task
    assert slices >= PLACEMENTS // SLICE
    decided = await world.collect(
        topics.decisions,
        lambda r: (
            sum(v["data"]["numberOfSelectedClusters"] == 2 for v in values(r, "placement.decided.v1")) >= PLACEMENTS
        ),
    )
    assert {v["subject"] for v in values(decided, "placement.decided.v1")} == {f"Placement/apps/{n}" for n in names} | {
        "Placement/apps/new",
        "Placement/apps/later",
    }


async def test_a_cold_start_decides_each_subject_once(world: KafkaWorld) -> None:
    """The first batches' subjects were decided on the inventory read to its end: no restored-task slice takes them
    again (every task of a cold start is restored empty; listing a task's subjects when its slice came did)."""
    topics = world.topics
    settings = world.settings(kafka={"max_batch_records": SLICE})  # many loop turns, each a slice's chance
    await create_topics(settings)
    names = [f"p{i:03}" for i in range(PLACEMENTS)]
    await world.produce([*_cluster_set(world), (topics.cluster_status, "ManagedCluster/c1", _cluster("c1"))])
    await world.produce([(topics.submissions, f"Placement/apps/{n}", _placement(n)) for n in names])  # a backlog
    async with running(settings) as processor:
        await world.collect(topics.decisions, lambda r: len(values(r, "placement.decided.v1")) >= PLACEMENTS)
        await asyncio.sleep(0.5)  # loop turns enough for a slice that would re-decide them
        decided = processor.metrics.registry.get_sample_value("placement_subjects_decided_total")
    assert decided == PLACEMENTS
