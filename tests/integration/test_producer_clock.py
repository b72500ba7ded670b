"""A producer's clock ahead of the processor's, on a real broker: a taint without `timeAdded` whose event time
is a year ahead is dated by the processor's clock, so a 20 s toleration expires after 20 s, not a year."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kafka_support import KafkaWorld, running
from test_cluster_placement_kafka import (
    WEB,
    base_inventory,
    decided,
    decisions_of,
    inventory_has,
    placement,
    rfc3339,
    taints,
    until_decisions,
)

pytestmark = pytest.mark.integration

SECONDS = 20


async def test_a_taint_dated_a_year_ahead_is_tolerated_for_its_seconds_of_processor_time(world: KafkaWorld) -> None:
    topics = world.topics
    async with running(world.settings()) as processor:
        runtime = processor.runtime
        assert runtime is not None
        await world.produce(base_inventory(world, {"c1": {}, "c2": {}}))
        await inventory_has(processor, ["c1", "c2"])
        sent = datetime.now(UTC)
        ahead = taints("c2", {"key": "maintenance", "value": "", "effect": "NoSelect"})  # no timeAdded
        ahead["time"] = rfc3339(sent + timedelta(days=365))
        await world.produce([(topics.taints, "c2", ahead)])
        await inventory_has(processor, ["c1", "c2"], tainted=["c2"])
        dated = runtime.inventory.taints_of("c2")[0].time_added
        assert dated is not None and sent <= dated <= datetime.now(UTC), "dated by the processor's clock"

        toleration = {"key": "maintenance", "operator": "Exists", "effect": "NoSelect", "tolerationSeconds": SECONDS}
        await world.produce([(topics.submissions, WEB, placement("web", {"tolerations": [toleration]}))])
        first = await world.collect(topics.decisions, lambda r: bool(decisions_of(r)))
        assert decisions_of(first) == [{"c1", "c2"}], "c2's taint is tolerated for now"
        expiry = dated + timedelta(seconds=SECONDS)
        assert runtime.next_timer() == expiry
        records = await world.collect(
            topics.decisions, until_decisions(WEB, {"c1", "c2"}, {"c1"}), timeout=SECONDS + 20
        )
    dropped = [v for _, v in decided(records) if v is not None][-1]
    evaluated = datetime.fromisoformat(dropped["data"]["evaluationTime"].replace("Z", "+00:00"))
    assert evaluated == expiry, "c2 dropped when its toleration ran out on the processor's clock"
