"""An operator learns of a broker outage from /readyz, and the processor resumes by itself when it is back."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest
from kafka_support import KafkaWorld, event, http_get, running, values, wait_for

from localbroker.broker import LocalBroker

pytestmark = pytest.mark.integration


def placement(name: str) -> dict[str, object]:
    return event("placement.applied", {"metadata": {"namespace": "ns", "name": name}})


async def test_readiness_follows_the_broker_and_processing_resumes(own_broker: LocalBroker) -> None:
    broker = own_broker
    world = KafkaWorld(broker.bootstrap)
    topics = world.topics
    async with running(world.settings()) as processor:
        ready_url = f"http://127.0.0.1:{processor.http_port}/readyz"
        assert (await http_get(ready_url))[0] == 200
        pid = broker.running_pid()
        assert pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        await broker.astop()
        await wait_for(lambda: not processor.ready, timeout=20)
        assert (await http_get(ready_url))[0] == 503
        metrics = (await http_get(f"http://127.0.0.1:{processor.http_port}/metrics"))[1]
        assert "placement_broker_reachable 0.0" in metrics
        assert (await http_get(f"http://127.0.0.1:{processor.http_port}/livez"))[0] == 200

        await broker.astart()
        await wait_for(lambda: processor.ready, timeout=60)
        await world.produce([(topics.submissions, "Placement/ns/after", placement("after"))])
        records = await world.collect(topics.decisions, lambda r: bool(values(r, "placement.decided.v1")), 60)
    assert [v["data"]["name"] for v in values(records, "placement.decided.v1")] == ["after"]
