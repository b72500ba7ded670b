"""The OCM deployer on the real API server and the real broker: the hub's objects end equal to the decisions.

ManagedClusters, a set, a binding and Placements are created as objects in the API server; `watch` publishes them,
the processor decides, and the deployer (`python -m deployers.ocm`, a subprocess so it can be killed) writes the
PlacementDecisions and the Placements' status. After each step what the API server holds must equal the last
decision on the decisions topic for every Placement (a deleted one: no pages): clusters relabelled, deleted and
tainted, Placements created, changed and deleted, the deployer killed and restarted, `watch` stopped and
restarted, a Placement handed back to upstream (its pages stay), one never handed over (never touched).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kafka_support import KafkaWorld, running
from kube_support import create, delete, kube_client, replace, watching
from lightkube import AsyncClient
from ocm_support import (
    NO_SELECT,
    DecisionReader,
    api_state,
    clusters,
    converged,
    deployer,
    last_decisions,
    placement_body,
    relabel,
    rollout_spec,
    world_of_clusters,
)

from cli.watch.command import WatchOptions, watch_forever
from cli.watch.kinds import HANDOVER_ANNOTATION
from connection.kubernetes import kube_config
from deployers.ocm.decision import PLACEMENT_LABEL
from deployers.ocm.writer import DECISION, PLACEMENT, VERSION

pytestmark = pytest.mark.integration


@asynccontextmanager
async def pipeline(world: KafkaWorld, kubeconfig: Path, tmp_path: Path) -> AsyncIterator[None]:
    """`watch` and the processor in this event loop."""
    async with running(world.settings()), watching(world, kubeconfig, tmp_path / "watch.json"):
        yield


async def versions(client: AsyncClient, ns: str, name: str) -> dict[str, str]:
    """The resourceVersions of the Placement and its pages: any write changes one."""
    listed = [p.to_dict() async for p in client.list(DECISION, namespace=ns, labels={PLACEMENT_LABEL: name})]
    found = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in listed}
    found[name] = (await client.get(PLACEMENT, name, namespace=ns)).to_dict()["metadata"]["resourceVersion"]
    return found


@asynccontextmanager
async def stopped_at_end(stop: Any) -> AsyncIterator[None]:
    """Calls `stop` when the block ends, however it ends (a test that failed midway leaves no task behind)."""
    try:
        yield
    finally:
        await stop()


def drop_annotation(body: dict[str, Any]) -> None:
    body["metadata"]["annotations"].pop(HANDOVER_ANNOTATION)


async def test_the_api_server_follows_the_decisions_through_changes_deletions_and_a_restart(
    world: KafkaWorld, kubeconfig: Path, tmp_path: Path
) -> None:
    mark, log = world.run_id, tmp_path / "deployer.log"
    a, b, c, d = (f"{letter}{mark}" for letter in "abcd")
    async with kube_client(kubeconfig) as client:
        ns, clusterset = await world_of_clusters(client, mark, {a: "us-east", b: "us-west", c: "eu-west", d: "us-east"})
        prod = {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}
        await create(client, "Placement", placement_body("web", ns, clusterset, {"numberOfClusters": 2, **prod}))
        await create(client, "Placement", placement_body("rollout", ns, clusterset, rollout_spec()))
        await create(client, "Placement", placement_body("upstream", ns, clusterset, {}, handed_over=False))
        eu_west = {
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"region": "eu-west"}}}}]
        }
        await create(client, "Placement", placement_body("steady", ns, clusterset, eu_west))
        await create(client, "Placement", placement_body("short", ns, clusterset, {"numberOfClusters": 1}))
        foreign = {
            "metadata": {"name": "upstream-decision-1", "namespace": ns, "labels": {PLACEMENT_LABEL: "upstream"}}
        }
        untouched = (
            await client.create(DECISION.from_dict({"apiVersion": VERSION, "kind": "PlacementDecision", **foreign}))
        ).to_dict()

        watch_stop = asyncio.Event()
        watch_options = WatchOptions(tmp_path / "watch.json")
        first_watch = asyncio.create_task(
            watch_forever(kube_config(kubeconfig, None), world.settings(), watch_options, watch_stop)
        )

        async def stop_watch() -> None:
            watch_stop.set()
            await asyncio.wait_for(first_watch, 30)

        async with running(world.settings()), stopped_at_end(stop_watch):
            with deployer(world, kubeconfig, log) as first:
                states = await converged(
                    world, client, ns, lambda last: {"web", "rollout", "steady", "short"} <= set(last)
                )
                assert len(clusters(states["web"])) == 2
                assert clusters(states["rollout"]) == sorted([a, b, c, d])
                assert len(states["rollout"]["pages"]) == 2  # canary (us-east) and the rest
                assert states["web"]["status"]["numberOfSelectedClusters"] == 2

                # a cluster leaves prod: web's selection changes; rollout is deleted: its pages go
                gone = clusters(states["web"])[0]
                await replace(client, "ManagedCluster", gone, relabel(env="dev"))
                await delete(client, "Placement", "rollout", ns)
                states = await converged(
                    world,
                    client,
                    ns,
                    lambda last: last.get("rollout", 1) is None and gone not in str(last.get("web", gone)),
                )
                assert gone not in clusters(states["web"]) and len(clusters(states["web"])) == 2
                assert states["rollout"] == {"pages": {}}
                steady = await versions(client, ns, "steady")
                first.send_signal(signal.SIGKILL)
                first.wait(30)
            restarted_at = log.stat().st_size

            # while the deployer is down: a new Placement, one deleted, and web's selection changes again
            await delete(client, "Placement", "short", ns)
            await create(client, "Placement", placement_body("late", ns, clusterset, {"numberOfClusters": 1}))
            await replace(client, "ManagedCluster", gone, relabel(env="prod"))
            await replace(client, "Placement", "web", lambda body: body["spec"].update(numberOfClusters=3), ns)
            await world.collect(
                world.topics.decisions,
                lambda rs: (
                    "late" in last_decisions(rs, ns)
                    and last_decisions(rs, ns)["short"] is None
                    and last_decisions(rs, ns)["web"]["numberOfSelectedClusters"] == 3
                ),
            )
            with deployer(world, kubeconfig, log) as second:
                states = await converged(world, client, ns, lambda last: "late" in last)
                assert len(clusters(states["web"])) == 3 and len(clusters(states["late"])) == 1
                assert states["short"] == {"pages": {}}  # deleted while the deployer was down: its pages went
                await asyncio.sleep(1)  # a converged deployer writes nothing more
                again, _ = await api_state(client, ns, "web")
                assert again == states["web"]
                assert await versions(client, ns, "steady") == steady, "an unchanged decision is not written again"
                assert f"Placement/{ns}/steady" not in log.read_text()[restarted_at:]

                # `watch` stopped (a second stop does nothing): a cluster deleted, one tainted; restarted, it lists
                await stop_watch()
                await delete(client, "ManagedCluster", a)
                await replace(client, "ManagedCluster", d, lambda body: body["spec"].update(taints=[NO_SELECT]))
                async with watching(world, kubeconfig, tmp_path / "watch.json"):
                    states = await converged(
                        world,
                        client,
                        ns,
                        lambda last: "web" in last and a not in str(last["web"]) and d not in str(last["web"]),
                    )
                    assert set(clusters(states["web"])) == {b, c}  # all that is left in prod

                    # steady handed back to upstream: its decision is deleted, its pages and status stay as they are
                    before = await versions(client, ns, "steady")
                    await replace(client, "Placement", "steady", drop_annotation, ns)
                    await world.collect(
                        world.topics.decisions, lambda rs: last_decisions(rs, ns).get("steady", 1) is None
                    )
                    await asyncio.sleep(1)
                    after = await versions(client, ns, "steady")
                    assert {k: v for k, v in after.items() if k != "steady"} == {
                        k: v for k, v in before.items() if k != "steady"
                    }
                    assert (await api_state(client, ns, "steady"))[0]["pages"] == states["steady"]["pages"]
            assert second.returncode == 0, log.read_text()[-3000:]

        now = (await client.get(DECISION, "upstream-decision-1", namespace=ns)).to_dict()
        assert now["metadata"]["resourceVersion"] == untouched["metadata"]["resourceVersion"]
        assert "status" not in (await client.get(PLACEMENT, "upstream", namespace=ns)).to_dict()


async def test_a_reader_never_sees_a_selected_cluster_missing_from_every_page(
    world: KafkaWorld, kubeconfig: Path, tmp_path: Path
) -> None:
    """A cluster moves from the canary page (page 1) to the other group's page (page 2): written in page order it
    would be on neither for a moment; the deployer writes page 2 first."""
    mark = world.run_id
    names = [f"{i}{mark}" for i in "abcdef"]
    regions = dict(zip(names, ["us-east", "us-east", "us-east", "eu-west", "eu-west", "us-west"], strict=True))
    async with kube_client(kubeconfig) as client:
        ns, clusterset = await world_of_clusters(client, mark, regions)
        await create(client, "Placement", placement_body("rollout", ns, clusterset, rollout_spec()))
        async with pipeline(world, kubeconfig, tmp_path):
            with deployer(world, kubeconfig, tmp_path / "deployer.log"):
                states = await converged(world, client, ns, lambda last: "rollout" in last)
                assert clusters(states["rollout"]) == sorted(names)
                async with kube_client(kubeconfig) as watcher, DecisionReader(watcher, ns) as reader:
                    for moved in names[:3]:  # every canary cluster leaves us-east, one after the other
                        await replace(client, "ManagedCluster", moved, relabel(region="eu-west"))
                    await converged(
                        world,
                        client,
                        ns,
                        lambda last: (
                            "rollout" in last
                            and all(
                                moved not in str(page)
                                for page in last["rollout"]["placementDecisions"]
                                if page["metadata"]["labels"].get(
                                    "cluster.open-cluster-management.io/decision-group-name"
                                )
                                == "canary"
                                for moved in names[:3]
                            )
                        ),
                    )
    assert len(reader.views["rollout"]) >= 3, "the reader saw the pages change"
    missing = reader.vanished("rollout", set(names))
    assert not missing, f"a reader saw selected clusters on no page: {missing}"
