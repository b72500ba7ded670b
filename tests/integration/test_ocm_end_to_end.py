"""placement-stream as OCM's scheduler, end to end: the API server and the broker real, `watch`, the processor and the
OCM deployer each a process of its own, and `replay` as the referee.

The hub's objects are created in the API server; once the three processes have done their work, the
PlacementDecisions and the Placements' status must equal what `placement-stream replay` (a process of its own, its
own engine) decides from the records `watch` published, read back from the topics. Then clusters are tainted,
relabelled and deleted and Placements changed and deleted while `watch` and the deployer are each killed with
SIGKILL and started again; at the end the API server equals replay's decisions once more, and a reader that watched
the PlacementDecisions throughout never saw a cluster that stayed selected missing from every page of its
Placement. A Placement without the hand-over annotation is neither published nor touched.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kafka_support import KafkaWorld, Record, stable
from kube_support import NAMESPACED, RESOURCES, create, delete, kube_client, replace
from lightkube import AsyncClient
from ocm_support import (
    NO_SELECT,
    ROOT,
    DecisionReader,
    api_state,
    clusters,
    decision_data,
    deployer_arguments,
    expected_state,
    placement_body,
    relabel,
    rollout_spec,
    start_python,
    start_watch,
    steady_clusters,
    stop_process,
    world_environment,
    world_of_clusters,
)

from cli.apply.command import prepare_topics
from cli.watch.kinds import HANDOVER_ANNOTATION
from deployers.ocm.apis import DECISION_INDEX_LABEL, DECISION_KEY_LABEL, InventoryDecisions
from deployers.ocm.writer import PLACEMENT
from topics.names import TopicRole

pytestmark = pytest.mark.integration

INVENTORY = InventoryDecisions()
WATCHED = (TopicRole.CLUSTER_STATUS, TopicRole.SUBMISSIONS)
"""The topics `watch` publishes to."""


async def watch_published(world: KafkaWorld) -> list[Record]:
    return await world.read_to_end([world.topics.name(role) for role in WATCHED])


def replay(world: KafkaWorld, lines: bytes, folder: Path) -> dict[str, Any]:
    """`placement-stream replay` over replay input lines: Placement key -> the data of its last decision (None when
    deleted)."""
    (folder / "replay.jsonl").write_bytes(lines)
    command = [sys.executable, "-m", "streams", "replay", str(folder / "replay.jsonl")]
    env = world_environment(world)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    last: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        item = orjson.loads(line)
        if item["topic"] == world.topics.decisions and str(item["key"]).startswith("Placement/"):
            value = item["value"]
            last[item["key"]] = None if value is None or value["data"].get("deleted") else value["data"]
    return last


def replay_decisions(world: KafkaWorld, records: list[Record], folder: Path) -> dict[str, Any]:
    """`replay` over the records, in the order they were produced."""
    ordered = sorted(records, key=lambda r: (r.timestamp, r.topic, r.partition, r.offset))
    lines = [
        orjson.dumps(
            {
                "topic": r.topic,
                "key": r.key.decode() if r.key else None,
                "value": None if r.value is None else orjson.loads(r.value),
                "timestamp": r.timestamp,
            }
        )
        for r in ordered
    ]
    return replay(world, b"\n".join(lines) + b"\n", folder)


VOLATILE_META = ("resourceVersion", "managedFields", "uid", "creationTimestamp", "generation")


def as_watch_takes(kind: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The object as `watch` publishes it (without what the API server adds; a Placement without its status and
    hand-over annotation); None for a Placement not handed over, which `watch` does not take."""
    meta = {k: v for k, v in body["metadata"].items() if k not in VOLATILE_META}
    if kind == "Placement":
        annotations = dict(meta.pop("annotations", None) or {})
        if annotations.pop(HANDOVER_ANNOTATION, None) is None:
            return None
        meta |= {"annotations": annotations} if annotations else {}
        body = {k: v for k, v in body.items() if k != "status"}
    return {**body, "metadata": meta}


async def replay_of_objects(world: KafkaWorld, client: AsyncClient, mark: str, ns: str, folder: Path) -> dict[str, Any]:
    """`replay` of the test's hub objects as they are now, written as YAML and turned into replay input by
    `placement-stream apply --dry-run` (the documented way): a referee that never read the topics, so a change
    `watch` lost would show."""
    documents = []
    for kind in ("ManagedClusterSet", "ManagedCluster", "ManagedClusterSetBinding", "Placement"):
        where = {"namespace": ns} if kind in NAMESPACED else {}
        async for item in client.list(RESOURCES[kind], **where):
            taken = as_watch_takes(kind, item.to_dict())
            if taken is not None and mark in taken["metadata"]["name"] + taken["metadata"].get("namespace", ""):
                documents.append(taken)
    (folder / "objects.yaml").write_text(yaml.safe_dump_all(documents))
    command = [sys.executable, "-m", "cli", "apply", "--dry-run", "-f", str(folder / "objects.yaml")]
    done = subprocess.run(command, cwd=ROOT, env=world_environment(world), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return replay(world, done.stdout, folder)


async def matches_replay(
    world: KafkaWorld,
    client: AsyncClient,
    ns: str,
    folder: Path,
    until: Callable[[dict[str, Any]], bool],
    timeout: float = 90.0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Until replay's decisions (Placement name -> data) from what `watch` has published by then satisfy `until`
    and the API server holds them for every Placement of `ns` (times left out: replay's clock is the records');
    replay's decisions and the API server's states."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        replayed = replay_decisions(world, await watch_published(world), folder)
        mine = {key.split("/")[2]: data for key, data in replayed.items() if key.startswith(f"Placement/{ns}/")}
        states, expected = {}, {}
        for name, data in mine.items():
            states[name], uid = await api_state(client, ns, name)
            expected[name] = expected_state(data, uid)
        if until(mine) and stable(states) == stable(expected):
            return mine, states
        if loop.time() > deadline:
            raise AssertionError(f"the API server {states} never matched replay's decisions {expected}")
        await asyncio.sleep(1.0)


async def decisions_per_placement(world: KafkaWorld, ns: str) -> dict[str, list[set[str]]]:
    """Each Placement's decisions as the processor published them, in order (a deletion: no cluster)."""
    found: dict[str, list[set[str]]] = {}
    for record in await world.read_to_end([world.topics.decisions]):
        key = record.key.decode() if record.key else ""
        if key.startswith(f"Placement/{ns}/"):
            data = decision_data(record)
            chosen = (
                set()
                if data is None
                else {d["clusterName"] for p in data["placementDecisions"] for d in p["status"]["decisions"]}
            )
            found.setdefault(key.split("/")[2], []).append(chosen)
    return found


def chosen(data: dict[str, Any] | None) -> set[str]:
    """The clusters of a decision (None: deleted)."""
    pages = [] if data is None else data["placementDecisions"]
    return {d["clusterName"] for p in pages for d in p["status"]["decisions"]}


async def slices_mirror_pages(client: AsyncClient, ns: str, states: dict[str, Any], timeout: float = 30.0) -> None:
    """Until SIG-Multicluster's slices hold, for every Placement, the clusters of its OCM pages, in page order."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    wanted = {name: {page: names for page, (_, names, _) in state["pages"].items()} for name, state in states.items()}
    while True:
        found: dict[str, dict[str, list[str]]] = {name: {} for name in states}
        async for item in client.list(INVENTORY.resource, namespace=ns):
            body = item.to_dict()
            labels, page = body["metadata"]["labels"], body["metadata"]["name"]
            assert page.endswith(f"-decision-{int(labels[DECISION_INDEX_LABEL]) + 1}")
            found.setdefault(labels[DECISION_KEY_LABEL], {})[page] = INVENTORY.clusters(body)
        if {k: {p: list(v) for p, v in pages.items()} for k, pages in found.items()} == wanted:
            return
        if loop.time() > deadline:
            raise AssertionError(f"SIG-Multicluster's slices {found} never matched OCM's pages {wanted}")
        await asyncio.sleep(0.2)


def tolerating(key: str) -> list[dict[str, str]]:
    return [{"key": key, "operator": "Exists"}]


def selector(**labels: str) -> dict[str, Any]:
    return {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": labels}}}]}


US_ONLY = {
    "predicates": [
        {
            "requiredClusterSelector": {
                "celSelector": {"celExpressions": ['managedCluster.metadata.labels["region"].startsWith("us-")']}
            }
        }
    ]
}
BOTH_APIS = ("--decision-api", "ocm", "--decision-api", "cluster-inventory")
"""The deployer writes OCM's PlacementDecisions and SIG-Multicluster's slices of the same pages."""
BY_NAME = {"prioritizerPolicy": {"mode": "Exact", "configurations": []}}
"""No prioritizer: the clusters chosen depend on the candidates alone, not on the order the processor met the other
Placements (Balance) or on its earlier decisions (Steady), so replay over the same records must choose the same."""


async def test_the_hub_ends_equal_to_replays_decisions_through_changes_and_kills(
    world: KafkaWorld, kubeconfig: Path, tmp_path: Path
) -> None:
    started, mark = time.monotonic(), world.run_id
    c1, c2, c3, c4, c5, c6 = (f"c{i}{mark}" for i in range(1, 7))
    regions = {c1: "us-east", c2: "us-east", c3: "us-west", c4: "eu-west", c5: "eu-west", c6: "us-west"}
    watch_state, logs = tmp_path / "watch.json", {name: tmp_path / f"{name}.log" for name in ("watch", "run", "ocm")}
    await prepare_topics(world.settings(), set(TopicRole))
    async with kube_client(kubeconfig) as client:
        ns, clusterset = await world_of_clusters(client, mark, regions)
        placements = {
            "web": {"numberOfClusters": 3, **selector(env="prod"), **BY_NAME},
            "cel": US_ONLY,
            "rollout": rollout_spec(),
            "tolerant": {**selector(region="eu-west"), "tolerations": tolerating("maintenance")},
        }
        for name, spec in placements.items():
            await create(client, "Placement", placement_body(name, ns, clusterset, spec))
        await create(client, "Placement", placement_body("upstream", ns, clusterset, {}, handed_over=False))

        processes = {
            "run": start_python(["-m", "streams", "run"], logs["run"], world_environment(world)),
            "watch": start_watch(world, kubeconfig, watch_state, logs["watch"]),
            "ocm": start_python(deployer_arguments(world, kubeconfig, *BOTH_APIS), logs["ocm"]),
        }
        try:
            async with kube_client(kubeconfig) as reading, DecisionReader(reading, ns) as reader:
                first, states = await matches_replay(
                    world, client, ns, tmp_path, lambda mine: set(mine) == set(placements)
                )
                assert set(first) == set(placements)
                assert len(clusters(states["web"])) == 3
                assert clusters(states["cel"]) == sorted([c1, c2, c3, c6])
                assert clusters(states["rollout"]) == sorted(regions)
                assert len(states["rollout"]["pages"]) == 2  # canary (us-east) and the rest
                assert clusters(states["tolerant"]) == sorted([c4, c5])
                first_seconds = time.monotonic() - started

                changes = _changes(client, ns, c1, c2, c3, c4, c6)
                killed = await _flow_with_kills(changes, processes, world, kubeconfig, watch_state, logs)

                final, states = await matches_replay(world, client, ns, tmp_path, _final(c1, c2, c3, c4, c5))
                await slices_mirror_pages(client, ns, states)
                objects = await replay_of_objects(world, client, mark, ns, tmp_path)
            published = await decisions_per_placement(world, ns)
        finally:
            for process in processes.values():
                stop_process(process)

        assert sorted(objects) == [f"Placement/{ns}/{name}" for name in ("rollout", "tolerant", "web")]
        for key, data in objects.items():  # the final objects, replayed afresh, are decided as the hub holds them
            name = key.split("/")[2]
            assert stable(expected_state(data, (await api_state(client, ns, name))[1])) == stable(states[name])
        assert final["cel"] is None and states["cel"] == {"pages": {}}  # deleted: its pages went
        assert clusters(states["web"]) == sorted([c1, c2, c3, c5])  # all untainted prod clusters: c4, c6 gone
        assert clusters(states["tolerant"]) == sorted([c1, c4, c5])  # tolerates c4's taint, c1 moved to eu-west
        assert clusters(states["rollout"]) == sorted([c1, c2, c3, c5])
        assert (await api_state(client, ns, "upstream"))[0] == {"pages": {}, "status": _empty_status()}
        upstream_records = [r for r in await watch_published(world) if r.key == f"Placement/{ns}/upstream".encode()]
        assert upstream_records == [], "a Placement not handed over is not published"
        assert "status" not in (await client.get(PLACEMENT, "upstream", namespace=ns)).to_dict()

    for name, decisions in published.items():
        missing = reader.vanished(name, steady_clusters(decisions))
        assert not missing, f"a reader saw {name}'s selected clusters on no page: {missing}"
    assert len(reader.views["rollout"]) >= 4, "the reader saw rollout's pages change"
    for name, process in processes.items():
        assert process.returncode == 0, logs[name].read_text()[-3000:]
    print(
        f"\nend to end: first match {first_seconds:.1f} s, all {time.monotonic() - started:.1f} s; "
        f"{len(regions)} clusters, {len(placements) + 1} placements, {len(changes)} changes, kills {killed}; "
        f"{sum(len(v) for v in published.values())} decisions, {sum(len(v) for v in reader.views.values())} reads"
    )


def _empty_status() -> dict[str, Any]:
    return {"numberOfSelectedClusters": 0, "decisionGroups": [], "conditions": []}


Change = Callable[[], Awaitable[Any]]


def _final(c1: str, c2: str, c3: str, c4: str, c5: str) -> Callable[[dict[str, Any]], bool]:
    """Replay's decisions once every change is published: cel deleted, web and rollout on every untainted cluster
    left, tolerant on eu-west's with c4 tolerated; rollout's canary group (us-east) empty, c2 having left it last."""

    def done(mine: dict[str, Any]) -> bool:
        return (
            "cel" in mine
            and mine["cel"] is None
            and chosen(mine.get("web")) == chosen(mine.get("rollout")) == {c1, c2, c3, c5}
            and chosen(mine.get("tolerant")) == {c1, c4, c5}
            and len(mine["rollout"]["placementDecisions"]) == 1
        )

    return done


def _changes(client: AsyncClient, ns: str, c1: str, c2: str, c3: str, c4: str, c6: str) -> list[Change]:
    """The hub's changes, in order: c2 moves between the canary group's page and the other group's page several
    times while staying selected by rollout (what the reader must never see missing)."""

    def cluster(name: str, change: Any) -> Change:
        return lambda: replace(client, "ManagedCluster", name, change)

    def spec(placement: str, **fields: Any) -> Change:
        return lambda: replace(client, "Placement", placement, lambda body: body["spec"].update(fields), ns)

    def taint(body: dict[str, Any]) -> None:
        body["spec"]["taints"] = [NO_SELECT]

    return [
        cluster(c4, taint),
        cluster(c2, relabel(region="us-west")),
        cluster(c2, relabel(region="us-east")),
        spec("web", numberOfClusters=2),
        cluster(c1, relabel(region="eu-west")),
        cluster(c2, relabel(region="us-west")),
        lambda: delete(client, "ManagedCluster", c6),
        cluster(c2, relabel(region="us-east")),
        lambda: delete(client, "Placement", "cel", ns),
        cluster(c3, relabel(tier="gold")),
        cluster(c2, relabel(region="us-west")),
        spec("web", numberOfClusters=4),
    ]


async def _flow_with_kills(
    changes: list[Change],
    processes: dict[str, subprocess.Popen[bytes]],
    world: KafkaWorld,
    kubeconfig: Path,
    watch_state: Path,
    logs: dict[str, Path],
) -> list[str]:
    """Make the changes at a steady pace; while they flow, SIGKILL `watch` (after the third change) and the
    deployer (after the seventh) and start each again at once."""
    restart = {
        3: ("watch", lambda: start_watch(world, kubeconfig, watch_state, logs["watch"])),
        7: ("ocm", lambda: start_python(deployer_arguments(world, kubeconfig, *BOTH_APIS), logs["ocm"])),
    }
    killed = []
    for number, change in enumerate(changes, start=1):
        await change()
        if number in restart:
            name, start = restart[number]
            processes[name].send_signal(signal.SIGKILL)
            processes[name].wait(30)
            killed.append(name)
            processes[name] = start()
        await asyncio.sleep(0.3)
    return killed
