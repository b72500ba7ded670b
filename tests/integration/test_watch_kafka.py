"""`placement-stream watch` on the real API server and the real broker: objects created, changed and deleted in the
API server become the records `apply -f` publishes; a Placement not handed over is not published; a watch
killed and restarted, or whose API server restarts, publishes each change once, those made meanwhile included."""

from __future__ import annotations

import asyncio
import signal
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiokafka import AIOKafkaConsumer
from kafka_support import EXAMPLES, KafkaWorld
from kube_support import create, delete, kube_client, managed_cluster, placement, replace, watching
from lightkube.generic_resource import create_namespaced_resource
from ocm_support import start_watch

from cli.apply.command import prepare_topics
from localkube import LocalKube
from localkube.crds import install_crds
from topics.names import TopicRole

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
Seen = dict[str, list[Any]]
"""Each key's record values in order (None for a tombstone)."""


async def collect(world: KafkaWorld, mark: str, until: Callable[[Seen], bool], timeout: float = 60.0) -> Seen:
    """The records of the cluster-status and submissions topics whose key contains `mark`, until `until` holds and
    every partition is read to its end as of then (a record published before the one awaited is never missed)."""
    topics = [world.topics.name(TopicRole.CLUSTER_STATUS), world.topics.name(TopicRole.SUBMISSIONS)]
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=world.bootstrap, group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    seen: Seen = defaultdict(list)
    ends: dict[Any, int] | None = None
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while ends is None or [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            if loop.time() > deadline:
                raise AssertionError(f"timed out; got {dict(seen)}")
            for chunk in (await consumer.getmany(timeout_ms=200)).values():
                for record in chunk:
                    key = record.key.decode() if record.key else ""
                    if mark in key:
                        seen[key].append(None if record.value is None else orjson.loads(record.value))
            if ends is None and until(seen):
                ends = await consumer.end_offsets(list(consumer.assignment()))
    finally:
        await consumer.stop()
    return dict(seen)


def kinds(values: list[Any]) -> list[str | None]:
    return [None if v is None else v["type"] for v in values]


async def test_changes_in_the_api_server_become_the_records_apply_publishes(
    world: KafkaWorld, kubeconfig: Path, tmp_path: Path
) -> None:
    mark = world.run_id
    ns, cluster, clusterset = f"ns{mark}", f"c{mark}", f"s{mark}"
    async with kube_client(kubeconfig) as client, watching(world, kubeconfig, tmp_path / "state.json"):
        await create(client, "ManagedCluster", managed_cluster(cluster, env="prod"))
        await create(client, "ManagedClusterSet", {"metadata": {"name": clusterset}, "spec": {}})
        binding = {"metadata": {"name": clusterset, "namespace": ns}, "spec": {"clusterSet": clusterset}}
        await create(client, "ManagedClusterSetBinding", binding)
        await create(client, "Placement", placement("upstream", ns, handed_over=False))
        await create(client, "Placement", placement("ours", ns, handed_over=True))
        await collect(world, mark, lambda seen: f"Placement/{ns}/ours" in seen)

        await replace(client, "ManagedCluster", cluster, lambda body: body["metadata"]["labels"].update(env="dev"))
        await replace(client, "Placement", "ours", lambda body: body["spec"].update(numberOfClusters=2), ns)
        await replace(client, "Placement", "upstream", lambda body: body["spec"].update(numberOfClusters=3), ns)
        await delete(client, "ManagedCluster", cluster)
        await delete(client, "Placement", "ours", ns)
        # each kind is watched on its own, so the cluster's records may come after the placement's
        seen = await collect(
            world,
            mark,
            lambda seen: (
                len(seen.get(f"Placement/{ns}/ours", [])) == 3 and len(seen.get(f"ManagedCluster/{cluster}", [])) == 3
            ),
        )

    assert kinds(seen[f"ManagedCluster/{cluster}"]) == ["managedcluster.applied.v1"] * 2 + [None]
    assert [v["data"]["metadata"]["labels"] for v in seen[f"ManagedCluster/{cluster}"][:2]] == [
        {"env": "prod"},
        {"env": "dev"},
    ]
    assert kinds(seen[f"ManagedClusterSet/{clusterset}"]) == ["managedclusterset.applied.v1"]
    assert kinds(seen[f"ManagedClusterSetBinding/{ns}/{clusterset}"]) == ["managedclustersetbinding.applied.v1"]
    ours = seen[f"Placement/{ns}/ours"]
    assert kinds(ours) == ["placement.applied.v1"] * 2 + ["placement.deleted.v1"]
    assert [v["data"]["spec"]["numberOfClusters"] for v in ours[:2]] == [1, 2]
    assert ours[2]["data"]["metadata"] == {"name": "ours", "namespace": ns}
    assert {v["source"] for v in ours} == {"/placement-stream/watch"}
    assert f"Placement/{ns}/upstream" not in seen  # upstream's controller decides it


async def settled(state: Path, mark: str, count: int, timeout: float = 30.0) -> None:
    """Until the state file records `count` objects named with `mark` as published (none in doubt)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            objects = orjson.loads(state.read_bytes())["objects"]
        except (OSError, orjson.JSONDecodeError):
            objects = {}
        if len([e for oid, e in objects.items() if mark in oid and e["digest"]]) == count:
            return
        if loop.time() > deadline:
            raise AssertionError(f"state file never settled: {objects}")
        await asyncio.sleep(0.05)


async def test_a_watch_killed_and_restarted_publishes_every_change_once(
    world: KafkaWorld, kubeconfig: Path, tmp_path: Path
) -> None:
    mark, state, log = world.run_id, tmp_path / "state.json", tmp_path / "watch.log"
    await prepare_topics(world.settings(), {TopicRole.CLUSTER_STATUS, TopicRole.SUBMISSIONS})
    ns = f"ns{mark}"
    a, b, c, d = (f"{letter}{mark}" for letter in "abcd")
    async with kube_client(kubeconfig) as client:
        first = start_watch(world, kubeconfig, state, log)
        try:
            for name in (a, b):
                await create(client, "ManagedCluster", managed_cluster(name, env="prod"))
            await create(client, "Placement", placement("web", ns, handed_over=True))
            await collect(world, mark, lambda seen: len(seen) == 3)
            await settled(state, mark, 3)  # killed between changes: a kill during a send may repeat that one
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)

        await replace(client, "ManagedCluster", a, lambda body: body["metadata"]["labels"].update(env="dev"))
        await delete(client, "ManagedCluster", b)
        await create(client, "ManagedCluster", managed_cluster(c, env="prod"))
        await replace(client, "Placement", "web", lambda body: body["spec"].update(numberOfClusters=3), ns)

        second = start_watch(world, kubeconfig, state, log)
        try:
            await collect(world, mark, lambda seen: f"ManagedCluster/{c}" in seen)
            await create(client, "ManagedCluster", managed_cluster(d))  # after the relist: the watch follows
            seen = await collect(
                world, mark, lambda seen: f"ManagedCluster/{d}" in seen and len(seen[f"Placement/{ns}/web"]) == 2
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
        assert second.returncode == 0, log.read_text()[-2000:]

    assert {key: kinds(values) for key, values in seen.items()} == {
        f"ManagedCluster/{a}": ["managedcluster.applied.v1"] * 2,
        f"ManagedCluster/{b}": ["managedcluster.applied.v1", None],
        f"ManagedCluster/{c}": ["managedcluster.applied.v1"],
        f"ManagedCluster/{d}": ["managedcluster.applied.v1"],
        f"Placement/{ns}/web": ["placement.applied.v1"] * 2,
    }
    assert seen[f"ManagedCluster/{a}"][1]["data"]["metadata"]["labels"] == {"env": "dev"}
    assert [v["data"]["spec"]["numberOfClusters"] for v in seen[f"Placement/{ns}/web"]] == [1, 3]


@pytest.fixture
def own_kube(tmp_path: Path) -> Iterator[LocalKube]:
    """An API server of the test's own, for a test that restarts it."""
    server = LocalKube(tmp_path / "kube")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_broken_watch_lists_again_and_publishes_only_what_changed(
    world: KafkaWorld, own_kube: LocalKube, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mark = world.run_id
    kept, changed, added = (f"{letter}{mark}" for letter in "kca")
    async with kube_client(own_kube.kubeconfig) as client, watching(world, own_kube.kubeconfig, tmp_path / "s.json"):
        for name in (kept, changed):
            await create(client, "ManagedCluster", managed_cluster(name, env="prod"))
        await collect(world, mark, lambda seen: len(seen) == 2)
        caplog.clear()
        await asyncio.to_thread(own_kube.crash_apiserver)  # every watch breaks; the objects stay
        await replace(client, "ManagedCluster", changed, lambda body: body["metadata"]["labels"].update(env="dev"))
        await create(client, "ManagedCluster", managed_cluster(added))
        seen = await collect(
            world, mark, lambda seen: f"ManagedCluster/{added}" in seen and len(seen[f"ManagedCluster/{changed}"]) == 2
        )
    assert "listing again" in caplog.text  # the watches were listed again, not resumed
    assert {key: kinds(values) for key, values in seen.items()} == {
        f"ManagedCluster/{kept}": ["managedcluster.applied.v1"],
        f"ManagedCluster/{changed}": ["managedcluster.applied.v1"] * 2,
        f"ManagedCluster/{added}": ["managedcluster.applied.v1"],
    }


PLACEMENT_RULE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "placementrules.core.hybridapp.io"},
    "spec": {
        "group": "core.hybridapp.io",
        "scope": "Namespaced",
        "names": {"plural": "placementrules", "singular": "placementrule", "kind": "PlacementRule"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
"""The hybrid PlacementRule has no upstream CRD; one that keeps any content is enough for `watch` to follow it."""


async def test_placement_rules_are_followed_when_the_server_serves_them(
    world: KafkaWorld, own_kube: LocalKube, tmp_path: Path
) -> None:
    install_crds(own_kube.kubeconfig, [PLACEMENT_RULE_CRD])
    rule_kind = create_namespaced_resource("core.hybridapp.io", "v1alpha1", "PlacementRule", "placementrules")
    rule = yaml.safe_load((EXAMPLES / "placementrule.yaml").read_text())
    ns = rule["metadata"]["namespace"] = f"ns{world.run_id}"
    async with kube_client(own_kube.kubeconfig) as client, watching(world, own_kube.kubeconfig, tmp_path / "s.json"):
        await client.create(rule_kind.from_dict(rule))
        await collect(world, world.run_id, lambda seen: f"PlacementRule/{ns}/db" in seen)
        await client.delete(rule_kind, "db", namespace=ns)
        seen = await collect(world, world.run_id, lambda seen: len(seen.get(f"PlacementRule/{ns}/db", [])) == 2)
    values = seen[f"PlacementRule/{ns}/db"]
    assert kinds(values) == ["placementrule.applied.v1", "placementrule.deleted.v1"]
    assert values[0]["data"]["spec"] == rule["spec"]
