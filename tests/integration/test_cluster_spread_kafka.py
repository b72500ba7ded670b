"""Spread placement end to end on a real Apache Kafka broker: a placement spread over three zones, then every
cluster of one zone tainted NoSelect; the decision moves within the remaining zones, within maxSkew."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kafka_support import KafkaWorld, running
from test_cluster_placement_kafka import (
    WEB,
    base_inventory,
    decided,
    decisions_of,
    inventory_has,
    placement,
    taints,
    until_decisions,
)

pytestmark = pytest.mark.integration

ZONE = "topology.kubernetes.io/zone"
CLUSTERS = {f"{zone}{i}": {ZONE: zone} for zone, size in (("a", 3), ("b", 2), ("c", 2)) for i in range(1, size + 1)}
SPREAD = {
    "numberOfClusters": 4,
    "spreadPolicy": {
        "spreadConstraints": [
            {"topologyKey": ZONE, "topologyKeyType": "Label", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
        ]
    },
}


def per_zone(clusters: set[str]) -> Counter[str]:
    return Counter(CLUSTERS[name][ZONE] for name in clusters)


@pytest.mark.parametrize(
    ("tainted", "before", "after"),
    [
        # picks a1, then b1 and c1 (the empty zones score highest), then a2 by name: a 2, b 1, c 1
        ("c", {"a1", "a2", "b1", "c1"}, {"a1", "a2", "b1", "b2"}),
        # without zone a, b and c hold two each
        ("a", {"a1", "a2", "b1", "c1"}, {"b1", "b2", "c1", "c2"}),
    ],
    ids=["zone-c-tainted", "zone-a-tainted"],
)
async def test_a_tainted_zone_moves_the_spread_into_the_others(
    world: KafkaWorld, tainted: str, before: set[str], after: set[str]
) -> None:
    topics = world.topics
    gone = sorted(name for name, labels in CLUSTERS.items() if labels[ZONE] == tainted)
    async with running(world.settings()) as processor:
        await world.produce(base_inventory(world, CLUSTERS))
        await inventory_has(processor, list(CLUSTERS))
        await world.produce([(topics.submissions, WEB, placement("web", SPREAD))])
        await world.collect(topics.decisions, until_decisions(WEB, before))

        maintenance: dict[str, Any] = {"key": "maintenance", "effect": "NoSelect"}
        await world.produce([(topics.taints, name, taints(name, maintenance)) for name in gone])
        records = await world.collect(topics.decisions, until_decisions(WEB, after))

    answers = decisions_of(records)
    assert answers[0] == before and answers[-1] == after
    for answer in answers:  # every published answer keeps the zones it uses within maxSkew 1
        counts = per_zone(answer)
        assert max(counts.values()) - min(counts.values()) <= 1, answer
    assert not set(gone) & after
    last = decided(records)[-1][1]
    assert last is not None
    assert last["data"]["numberOfSelectedClusters"] == 4
    satisfied = {c["type"]: c for c in last["data"]["conditions"]}["PlacementSatisfied"]
    assert (satisfied["status"], satisfied["reason"]) == ("True", "AllDecisionsScheduled")
    assert set(last["data"]["scores"]) == after, "the selected clusters' scores only (K3)"
