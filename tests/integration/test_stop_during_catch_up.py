"""A stop that arrives while the processor is still reading its inventory closes every Kafka client it opened."""

from __future__ import annotations

import asyncio
import gc
import logging

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from kafka_support import KafkaWorld, event

from streams.kafka.admin import create_topics
from streams.service import Processor

pytestmark = pytest.mark.integration

CLUSTERS = 20_000
"""With 2 KB of labels each, reading them takes a while, so the stop lands inside the catch-up."""


async def test_a_stop_during_the_inventory_catch_up_leaves_no_client_open(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture
) -> None:
    settings = world.settings(stop_grace_seconds=0)  # the stop cancels the catch-up instead of awaiting it
    await create_topics(settings)
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap, linger_ms=20, max_batch_size=1_000_000)
    await producer.start()
    try:
        pad = "x" * 2000
        sent = [
            await producer.send(
                world.topics.cluster_status,
                orjson.dumps(event("managedcluster.applied", {"metadata": {"name": f"c{i}", "labels": {"pad": pad}}})),
                key=f"ManagedCluster/c{i}".encode(),
            )
            for i in range(CLUSTERS)
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    processor = Processor(settings)
    task = asyncio.create_task(processor.run())
    while processor.runtime is None or not processor.runtime.inventory.objects("ManagedCluster"):
        assert not task.done(), task
        await asyncio.sleep(0.001)  # the catch-up has begun once the first clusters are in
    caplog.set_level(logging.ERROR, logger="asyncio")
    processor.request_stop()
    await asyncio.wait_for(task, 30)
    read = len(processor.runtime.inventory.objects("ManagedCluster"))
    assert 0 < read < CLUSTERS, f"the stop did not land in the catch-up ({read} of {CLUSTERS} clusters read)"
    assert not processor.ready
    gc.collect()
    unclosed = [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()]
    assert not unclosed, unclosed
