"""Cluster placement (OCM Placement) end to end on a real Apache Kafka broker.

Inventory goes to the cluster-status and taints topics, Placements to the submissions topic as
`placement.applied` with key `Placement/<ns>/<name>`, and decisions come back as `placement.decided`
on the decisions topic. The processor runs in this event loop (`running`), so tests can look at its runtime.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from kafka_support import KafkaWorld, Record, event, http_get, running, wait_for

from cli.main import main as cli_main
from engine.cluster import ClusterPlacementEngine
from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from streams.service import Processor

pytestmark = pytest.mark.integration

CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
WEB = "Placement/apps/web"


# --- builders -------------------------------------------------------------------------------------
def managed_cluster(name: str, cluster_set: str | None = "prod", **labels: str) -> dict[str, Any]:
    if cluster_set is not None:
        labels[CLUSTERSET_LABEL] = cluster_set
    return event("managedcluster.applied", {"metadata": {"name": name, "labels": labels}})


def taints(cluster: str, *items: dict[str, Any]) -> dict[str, Any]:
    return event("cluster.taints.updated", {"cluster": cluster, "taints": list(items)})


def placement(name: str, spec: dict[str, Any], namespace: str = "apps", generation: int = 1) -> dict[str, Any]:
    return event(
        "placement.applied",
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": namespace, "generation": generation},
            "spec": spec,
        },
    )


def base_inventory(world: KafkaWorld, clusters: dict[str, dict[str, str]]) -> list[tuple[str, str, Any]]:
    """Set `prod` (exclusive label), its binding in namespace `apps`, and the clusters (all in `prod`)."""
    status = world.topics.cluster_status
    items: list[tuple[str, str, Any]] = [
        (status, "ManagedClusterSet/prod", event("managedclusterset.applied", {"metadata": {"name": "prod"}})),
        (
            status,
            "ManagedClusterSetBinding/apps/prod",
            event(
                "managedclustersetbinding.applied",
                {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}},
            ),
        ),
    ]
    items += [(status, f"ManagedCluster/{name}", managed_cluster(name, **labels)) for name, labels in clusters.items()]
    return items


# --- reading decisions ----------------------------------------------------------------------------
def decided(records: Sequence[Record], key: str = WEB) -> list[tuple[Record, dict[str, Any] | None]]:
    """Every record of one subject on the decisions topic, in order, with its decoded value (None: tombstone)."""
    return [(r, None if r.value is None else orjson.loads(r.value)) for r in records if r.key == key.encode()]


def chosen(value: dict[str, Any]) -> set[str]:
    """The decided clusters over every PlacementDecision page."""
    return {d["clusterName"] for page in value["data"]["placementDecisions"] for d in page["status"]["decisions"]}


def decisions_of(records: Sequence[Record], key: str = WEB) -> list[set[str]]:
    """The cluster sets of the subject's `placement.decided` events (tombstones and deletions left out)."""
    return [
        chosen(v)
        for _, v in decided(records, key)
        if v is not None and v["type"] == "placement.decided.v1" and not v["data"]["deleted"]
    ]


def until_decisions(key: str, *expected: set[str]) -> Callable[[list[Record]], bool]:
    """Stop condition: the subject's decisions so far end with exactly `expected` (as a suffix)."""

    def done(records: list[Record]) -> bool:
        got = decisions_of(records, key)
        return len(got) >= len(expected) and got[-len(expected) :] == list(expected)

    return done


async def inventory_has(processor: Processor, clusters: Sequence[str], tainted: Sequence[str] = ()) -> None:
    """Wait until the processor's global tables hold these clusters (and taints) before sending placements."""
    runtime = processor.runtime
    assert runtime is not None
    inventory = runtime.inventory
    await wait_for(
        lambda: (
            all(inventory.cluster(c) is not None for c in clusters)
            and all(inventory.taints_of(c) for c in tainted)
            and inventory.cluster_set("prod") is not None
        )
    )


def rfc3339(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


# --- tests ----------------------------------------------------------------------------------------
async def test_a_no_select_taint_removes_a_selected_cluster(world: KafkaWorld) -> None:
    topics = world.topics
    async with running(world.settings()) as processor:
        await world.produce(base_inventory(world, {"c1": {}, "c2": {}, "c3": {}}))
        await inventory_has(processor, ["c1", "c2", "c3"])
        await world.produce([(topics.submissions, WEB, placement("web", {}))])
        await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c2", "c3"}))

        await world.produce([(topics.taints, "c2", taints("c2", {"key": "gpu-broken", "effect": "NoSelect"}))])
        records = await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c3"}))
    assert decisions_of(records) == [{"c1", "c2", "c3"}, {"c1", "c3"}], "one decision per answer, nothing else"
    last = decided(records)[-1][1]
    assert last is not None
    assert last["data"]["numberOfSelectedClusters"] == 2
    satisfied = {c["type"]: c for c in last["data"]["conditions"]}["PlacementSatisfied"]
    assert (satisfied["status"], satisfied["reason"]) == ("True", "AllDecisionsScheduled")
    assert "c2" not in last["data"]["scores"], "a filtered cluster has no score"


async def test_b_toleration_seconds_expire_at_the_exact_instant_by_timer(world: KafkaWorld) -> None:
    topics = world.topics
    seconds = 4
    async with running(world.settings()) as processor:
        runtime = processor.runtime
        assert runtime is not None
        added = datetime.now(UTC).replace(microsecond=0)  # object times are whole seconds (spec A4)
        expiry = added + timedelta(seconds=seconds)
        taint = {"key": "maintenance", "value": "", "effect": "NoSelect", "timeAdded": rfc3339(added)}
        await world.produce([*base_inventory(world, {"c1": {}, "c2": {}}), (topics.taints, "c2", taints("c2", taint))])
        await inventory_has(processor, ["c1", "c2"], tainted=["c2"])
        toleration = {"key": "maintenance", "operator": "Exists", "effect": "NoSelect", "tolerationSeconds": seconds}
        await world.produce([(topics.submissions, WEB, placement("web", {"tolerations": [toleration]}))])
        first = await world.collect(topics.decisions, lambda r: bool(decisions_of(r)))
        assert datetime.now(UTC) < expiry, "the first decision came too late to observe the expiry"
        assert decisions_of(first) == [{"c1", "c2"}], "c2's taint is tolerated for now"
        assert first[-1].timestamp < expiry.timestamp() * 1000
        assert runtime.next_timer() == expiry, "the timer is set to timeAdded + tolerationSeconds"
        consumed, inventory_version = processor.records_done, runtime.inventory.version

        records = await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c2"}, {"c1"}), timeout=30)
        assert processor.records_done == consumed, "no input arrived: the re-decision came from the timer"
        assert runtime.inventory.version == inventory_version
    history = [(r, v) for r, v in decided(records) if v is not None]
    assert [chosen(v) for _, v in history] == [{"c1", "c2"}, {"c1"}]
    expiry_ms = expiry.timestamp() * 1000
    for record, value in history:
        if "c2" in chosen(value):
            assert record.timestamp < expiry_ms, "c2 stays while the toleration holds"
        else:
            assert record.timestamp >= expiry_ms, "published before the toleration expired"
            assert record.timestamp <= expiry_ms + 2000, "the timer fired late"
            # the timer runs at its own instant: that is the event's evaluation time, to the microsecond
            assert value["time"] == value["data"]["evaluationTime"]
            fired = datetime.fromisoformat(value["data"]["evaluationTime"].replace("Z", "+00:00"))
            assert fired == expiry


async def test_c_a_label_change_brings_a_new_cluster_in(world: KafkaWorld) -> None:
    topics = world.topics
    gold = {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]}
    async with running(world.settings()) as processor:
        inventory = base_inventory(world, {"c1": {"tier": "gold"}, "c2": {"tier": "gold"}, "c3": {"tier": "bronze"}})
        outside = (topics.cluster_status, "ManagedCluster/c4", managed_cluster("c4", cluster_set=None, tier="gold"))
        await world.produce([*inventory, outside])
        await inventory_has(processor, ["c1", "c2", "c3", "c4"])
        await world.produce([(topics.submissions, WEB, placement("web", gold))])
        await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c2"}))

        # c3 now matches the predicate
        await world.produce(
            [(topics.cluster_status, "ManagedCluster/c3", managed_cluster("c3", tier="gold", zone="b"))]
        )
        await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c2"}, {"c1", "c2", "c3"}))

        # c4 joins the set through its cluster-set label (it already matched the predicate)
        await world.produce([(topics.cluster_status, "ManagedCluster/c4", managed_cluster("c4", tier="gold"))])
        records = await world.collect(
            topics.decisions, until_decisions(WEB, {"c1", "c2"}, {"c1", "c2", "c3"}, {"c1", "c2", "c3", "c4"})
        )
    assert decisions_of(records) == [{"c1", "c2"}, {"c1", "c2", "c3"}, {"c1", "c2", "c3", "c4"}]


async def test_d_placement_updates_and_deletes_are_honoured(world: KafkaWorld) -> None:
    topics = world.topics
    api = "Placement/apps/api"
    async with running(world.settings()) as processor:
        runtime = processor.runtime
        assert runtime is not None
        clusters = {"c1": {"region": "us"}, "c2": {"region": "eu"}, "c3": {"region": "eu"}}
        await world.produce(base_inventory(world, clusters))
        await inventory_has(processor, list(clusters))
        await world.produce(
            [
                (topics.submissions, WEB, placement("web", {"numberOfClusters": 3})),
                (topics.submissions, api, placement("api", {})),
            ]
        )
        await world.collect(
            topics.decisions,
            lambda r: until_decisions(WEB, {"c1", "c2", "c3"})(r) and until_decisions(api, {"c1", "c2", "c3"})(r),
        )

        # numberOfClusters 3 -> 1: all scores tie (Steady 100 each, equal Balance), so the first by name wins
        await world.produce([(topics.submissions, WEB, placement("web", {"numberOfClusters": 1}, generation=2))])
        await world.collect(topics.decisions, until_decisions(WEB, {"c1", "c2", "c3"}, {"c1"}))

        # predicate change: only eu clusters qualify; c2 and c3 tie, c2 wins by name
        eu = {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"region": "eu"}}}}
        spec = {"numberOfClusters": 1, "predicates": [eu]}
        await world.produce([(topics.submissions, WEB, placement("web", spec, generation=3))])
        await world.collect(topics.decisions, until_decisions(WEB, {"c1"}, {"c2"}))

        # delete: a tombstone for web, a placement.deleted event for api
        deleted = event("placement.deleted", {"metadata": {"name": "api", "namespace": "apps"}})
        await world.produce([(topics.submissions, WEB, None), (topics.submissions, api, deleted)])

        def both_gone(records: list[Record]) -> bool:
            return all(decided(records, k) and decided(records, k)[-1][1] is None for k in (WEB, api))

        records = await world.collect(topics.decisions, both_gone)
        assert WEB not in runtime.states and api not in runtime.states
        changelog = await world.collect(
            topics.changelog, lambda r: any(x.key == WEB.encode() and x.value is None for x in r)
        )

    web = [v for _, v in decided(records)]
    assert [None if v is None else (v["data"]["generation"], v["data"]["deleted"]) for v in web] == [
        (1, False),
        (2, False),
        (3, False),
        (3, True),
        None,
    ], "each update is one decision; delete is a final deleted event, then a tombstone"
    assert [chosen(v) for v in web[:3] if v is not None] == [{"c1", "c2", "c3"}, {"c1"}, {"c2"}]
    final = web[3]
    assert final is not None
    assert final["data"]["placementDecisions"] == [] and final["data"]["decisionGroups"] == []
    assert [None if v is None else v["data"]["deleted"] for _, v in decided(records, api)] == [False, True, None]
    assert decided(changelog)[-1][0].value is None, "the deleted placement's state is tombstoned in the changelog"


async def test_e_explain_shows_which_filter_removed_each_cluster(
    world: KafkaWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    topics = world.topics
    spec = {
        "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}],
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 2}
            ]
        },
    }
    settings = world.settings(explain=[WEB])  # a free HTTP port (settings port 0 would disable the endpoint)
    async with running(settings) as processor:
        assert processor.http_port == settings.http_port
        await world.produce(
            [
                *base_inventory(world, {"c1": {"env": "prod"}, "c2": {"env": "prod"}, "c3": {"env": "dev"}}),
                (topics.taints, "c2", taints("c2", {"key": "maintenance", "effect": "NoSelect"})),
            ]
        )
        await inventory_has(processor, ["c1", "c2", "c3"], tainted=["c2"])
        await world.produce([(topics.submissions, WEB, placement("web", spec))])
        records = await world.collect(topics.decisions, until_decisions(WEB, {"c1"}))

        base = f"http://127.0.0.1:{processor.http_port}"
        status, body = await http_get(f"{base}/explain/Placement%2Fapps%2Fweb")
        missing_status, _ = await http_get(f"{base}/explain/Placement%2Fapps%2Fnothing")
        capsys.readouterr()
        code = await asyncio.to_thread(cli_main, ["explain", "--url", base, "--placement", "apps/web"])
        printed = capsys.readouterr().out
        missing_code = await asyncio.to_thread(cli_main, ["explain", "--url", base, "--placement", "apps/nothing"])
        missing_err = capsys.readouterr().err

    assert status == 200, body
    report = orjson.loads(body)
    assert report["placement"] == WEB
    assert report["availableClusters"] == ["c1", "c2", "c3"]
    assert report["filteredBy"] == {"c2": "TaintToleration", "c3": "Predicate"}
    assert report["filteredPipelineResults"] == [
        {"name": "Predicate", "filteredClusters": ["c1", "c2"]},
        {"name": "Predicate,TaintToleration", "filteredClusters": ["c1"]},
    ]
    assert [(p["name"], p["weight"]) for p in report["prioritizeResults"]] == [
        ("Balance", 1),
        ("Steady", 1),
        ("ResourceAllocatableCPU", 2),
    ]
    assert set(report["passingScores"]) == {"c1"}
    assert report["selected"] == ["c1"]
    assert missing_status == 404

    assert code == 0
    cli_report = orjson.loads(printed)
    volatile = {"evaluationTime"}
    assert {k: v for k, v in cli_report.items() if k not in volatile} == {
        k: v for k, v in report.items() if k not in volatile
    }, "the CLI prints what the endpoint serves"
    assert missing_code == 1 and "apps/nothing is not known" in missing_err

    # explain was requested in the settings, so the decision event carries the same filter data (spec K4)
    last = decided(records)[-1][1]
    assert last is not None
    assert last["data"]["filteredBy"] == {"c2": "TaintToleration", "c3": "Predicate"}
    assert [p["name"] for p in last["data"]["prioritizers"]] == ["Balance", "Steady", "ResourceAllocatableCPU"]


async def test_two_instances_share_the_placements_and_balance_counts_across_them(world: KafkaWorld) -> None:
    """Scale-out: two processors of one group own one task each. A placement decided on one instance counts in
    the other's Balance (F2 counts every other placement), so a second placement there avoids the first one's
    cluster. When one instance leaves, the other takes its task over and counts each placement once; so does a
    new instance."""
    by_task = {partition_of(f"Placement/apps/p{i}", world.partitions): f"p{i}" for i in range(20)}
    first_name, second_name = by_task[0], by_task[1]
    submissions, spec = world.topics.submissions, {"numberOfClusters": 1}
    async with running(world.settings()) as one:  # creates the topics
        await world.produce(base_inventory(world, {"c1": {}, "c2": {}}))
        async with running(world.settings()) as two:
            await wait_for(lambda: one.owned_tasks | two.owned_tasks == {0, 1} and len(one.owned_tasks) == 1)
            owner, other = (one, two) if 0 in one.owned_tasks else (two, one)
            await world.produce([(submissions, f"Placement/apps/{first_name}", placement(first_name, spec))])
            first_key = f"Placement/apps/{first_name}"
            records = await world.collect(world.topics.decisions, lambda rs: bool(decided(rs, first_key)))
            assert decisions_of(records, first_key) == [{"c1"}]  # nothing else decided: a tie, name order
            await wait_for(lambda: _counts(other) == {"c1": 1})  # the owner's changelog entry reached the other

            second_key = f"Placement/apps/{second_name}"
            await world.produce([(submissions, second_key, placement(second_name, spec))])
            records = await world.collect(world.topics.decisions, lambda rs: bool(decided(rs, second_key)))
            assert decisions_of(records, second_key) == [{"c2"}]  # Balance: c1 already holds a placement
            await wait_for(lambda: _counts(owner) == {"c1": 1, "c2": 1})
            # each submission was processed (and committed) once, by its owner, which decided it at least once
            processed = {p: _sample(p, "placement_records_processed_total", topic=submissions) for p in (one, two)}
            assert processed == {owner: 1.0, other: 1.0}
            assert all(_sample(p, "placement_subjects_decided_total") >= 1 for p in (one, two))
        # `two` has left the group: `one` owns both tasks, whichever it owned before
        await wait_for(lambda: one.owned_tasks == {0, 1})
        assert _counts(one) == {"c1": 1, "c2": 1}
        assert set(one.runtime.states if one.runtime else ()) == {first_key, second_key}
        # a newcomer reads the task it does not get from the start (nothing new is written: read from the end,
        # the other task's placement would never count) and restores the one it gets
        async with running(world.settings()) as three:
            await wait_for(lambda: len(three.owned_tasks) == 1 and len(one.owned_tasks) == 1)
            await wait_for(lambda: _counts(three) == {"c1": 1, "c2": 1})
    records = await world.collect(world.topics.decisions, lambda rs: len(decided(rs, second_key)) >= 1)
    assert [len(decided(records, key)) for key in (first_key, second_key)] == [1, 1]  # nothing re-published


def _counts(processor: Processor) -> dict[str, int]:
    """The processor's Balance input: how many placements, its own and other instances', decided each cluster."""
    assert processor.runtime is not None
    engine = processor.runtime.engine_for(WEB)
    assert isinstance(engine, ClusterPlacementEngine)
    return engine.decided_counts()


def _sample(processor: Processor, name: str, **labels: str) -> float:
    return processor.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_f_a_costly_placement_commits_after_the_cheap_ones_of_its_own_task(world: KafkaWorld) -> None:
    """A CEL placement not yet evaluated in its spec is costly (platform P15): the cheap placement of the same task
    and batch commits in a transaction of its own before the costly one is decided, so a commit marker lies
    between their decisions on the partition they share."""
    topics = world.topics
    costly = "Placement/apps/costly"
    task = partition_of(costly, world.partitions)
    cheap_name = next(
        f"cheap{i}" for i in range(100) if partition_of(f"Placement/apps/cheap{i}", world.partitions) == task
    )
    cheap = f"Placement/apps/{cheap_name}"
    loop = "[" + ",".join(map(str, range(1000))) + "]"
    expression = f"managedCluster.metadata.name != '' && {loop}.all(x, {loop}.all(y, x >= 0))"
    cel = {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}]}
    await create_topics(world.settings())
    await world.produce(base_inventory(world, {"c1": {}, "c2": {}}))
    # produced before the processor starts, so its first batch holds both
    await world.produce([(topics.submissions, costly, placement("costly", cel)),
                         (topics.submissions, cheap, placement(cheap_name, {}))])  # fmt: skip
    async with running(world.settings()):
        records = await world.collect(
            topics.decisions, lambda got: bool(decisions_of(got, costly)) and bool(decisions_of(got, cheap))
        )
    [(first, _)] = decided(records, cheap)
    [(second, _)] = decided(records, costly)
    assert decisions_of(records, costly) == [set()] and decisions_of(records, cheap) == [{"c1", "c2"}]
    assert first.partition == second.partition == task
    assert second.offset > first.offset + 1, "one transaction held both"
