"""Helpers for tests of the whole OCM path: hub objects, the deployer and `watch` as processes, the decisions topic
read back, what the API server holds, and a reader that watches the PlacementDecisions throughout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from kafka_support import KafkaWorld, Record
from kube_support import create, managed_cluster
from lightkube import ApiError, AsyncClient

from cli.watch.kinds import HANDOVER_ANNOTATION
from deployers.ocm.decision import PLACEMENT_LABEL, STATUS_FIELDS
from deployers.ocm.writer import DECISION, PLACEMENT

ROOT = Path(__file__).resolve().parents[2]
SET_LABEL = "cluster.open-cluster-management.io/clusterset"
NO_SELECT = {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
State = dict[str, Any]
"""One Placement as the API server holds it: page name -> (labels, clusters, owner uids), and its status fields."""


def placement_body(name: str, ns: str, clusterset: str, spec: dict[str, Any], *, handed_over: bool = True) -> Any:
    annotations = {HANDOVER_ANNOTATION: "true"} if handed_over else {}
    meta = {"name": name, "namespace": ns, "annotations": annotations}
    return {"metadata": meta, "spec": {"clusterSets": [clusterset], **spec}}


def rollout_spec() -> dict[str, Any]:
    """Every cluster of the set; those in us-east make the first group (page 1), the rest the second (page 2)."""
    canary = {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"region": "us-east"}}}}
    return {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "100%", "decisionGroups": [canary]}}}


async def world_of_clusters(client: AsyncClient, mark: str, regions: dict[str, str]) -> tuple[str, str]:
    """A set, its binding in a namespace of the test's own, and one cluster per entry (env=prod everywhere)."""
    ns, clusterset = f"ns{mark}", f"s{mark}"
    await create(client, "ManagedClusterSet", {"metadata": {"name": clusterset}, "spec": {}})
    binding = {"metadata": {"name": clusterset, "namespace": ns}, "spec": {"clusterSet": clusterset}}
    await create(client, "ManagedClusterSetBinding", binding)
    for name, region in regions.items():
        await create(
            client, "ManagedCluster", managed_cluster(name, env="prod", region=region, **{SET_LABEL: clusterset})
        )
    return ns, clusterset


def decision_data(record: Record) -> dict[str, Any] | None:
    """A decision record's data; None for a tombstone or a deleted Placement's decision."""
    data = None if record.value is None else orjson.loads(record.value)["data"]
    return None if data is None or data.get("deleted") else data


def last_decisions(records: list[Record], ns: str) -> dict[str, Any]:
    """Placement name -> the data of its last decision (None: deleted), from the topic (the test's own reading)."""
    last: dict[str, Any] = {}
    for record in records:
        key = record.key.decode() if record.key else ""
        if key.startswith(f"Placement/{ns}/"):
            last[key.split("/")[2]] = decision_data(record)
    return last


def expected_state(data: dict[str, Any] | None, uid: str | None) -> State:
    if data is None:
        return {"pages": {}}
    pages = {
        p["metadata"]["name"]: (p["metadata"]["labels"], [d["clusterName"] for d in p["status"]["decisions"]], [uid])
        for p in data["placementDecisions"]
    }
    return {
        "pages": pages,
        "status": {f: data.get(f, 0 if f == "numberOfSelectedClusters" else []) for f in STATUS_FIELDS},
    }


async def api_state(client: AsyncClient, ns: str, name: str) -> tuple[State, str | None]:
    """The pages labelled for the Placement and its status as the API server holds them, and its uid."""
    listed = [p.to_dict() async for p in client.list(DECISION, namespace=ns, labels={PLACEMENT_LABEL: name})]
    pages = {
        p["metadata"]["name"]: (
            p["metadata"]["labels"],
            [d["clusterName"] for d in (p.get("status") or {}).get("decisions", [])],
            [o["uid"] for o in p["metadata"].get("ownerReferences", [])],
        )
        for p in listed
    }
    try:
        placement = (await client.get(PLACEMENT, name, namespace=ns)).to_dict()
    except ApiError:  # absent: a deleted Placement has no status to compare
        return {"pages": pages}, None
    status = placement.get("status") or {}
    return {
        "pages": pages,
        "status": {f: status.get(f, 0 if f == "numberOfSelectedClusters" else []) for f in STATUS_FIELDS},
    }, placement["metadata"]["uid"]


async def converged(
    world: KafkaWorld, client: AsyncClient, ns: str, until: Any, timeout: float = 60.0
) -> dict[str, State]:
    """Until the topic shows `until(last decisions)` and the API server equals the last decisions; the states."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        records = await world.collect(world.topics.decisions, lambda rs: until(last_decisions(rs, ns)))
        last = last_decisions(records, ns)
        states, expected = {}, {}
        for name, data in last.items():
            states[name], uid = await api_state(client, ns, name)
            expected[name] = expected_state(data, uid)
        if states == expected:
            return states
        if loop.time() > deadline:
            raise AssertionError(f"API server {states} never matched the decisions {expected}")
        await asyncio.sleep(0.2)


def clusters(state: State) -> list[str]:
    return sorted(c for _, names, _ in state["pages"].values() for c in names)


def relabel(**labels: str) -> Any:
    return lambda body: body["metadata"]["labels"].update(labels)


def start_python(arguments: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`python ARGUMENTS` from the checkout, its output appended to `log`."""
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, *arguments], cwd=ROOT, env=env or dict(os.environ), stdout=output, stderr=subprocess.STDOUT
        )


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM unless it ended already (a test may have killed it), and wait for its end."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    process.wait(30)


def deployer_arguments(world: KafkaWorld, kubeconfig: Path, *extra: str) -> list[str]:
    prefix = world.topics.decisions.removesuffix("placement.decisions")
    command = ["-m", "deployers.ocm", "--kubeconfig", str(kubeconfig), "--bootstrap", world.bootstrap]
    return [*command, "--topic-prefix", prefix, *extra]


@contextmanager
def deployer(world: KafkaWorld, kubeconfig: Path, log: Path, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m deployers.ocm` until the block ends (SIGTERM; the block may have killed it already)."""
    process = start_python(deployer_arguments(world, kubeconfig, *extra), log)
    try:
        yield process
    finally:
        stop_process(process)


def world_environment(world: KafkaWorld) -> dict[str, str]:
    """This process's environment with the world's settings, for a `placement-stream` command in a subprocess."""
    env = {**os.environ, **world.env()}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    return env


def start_watch(world: KafkaWorld, kubeconfig: Path, state: Path, log: Path) -> subprocess.Popen[bytes]:
    """`placement-stream watch` as a process, with the world's topics and broker."""
    arguments = ["-m", "cli", "watch", "--kubeconfig", str(kubeconfig), "--state-file", str(state)]
    return start_python(arguments, log, world_environment(world))


class DecisionReader:
    """A reader of the PlacementDecisions of one namespace, as the tools that act on them read: it lists them and
    then watches every change; after each change it records the clusters the changed page's Placement has on any of
    its pages (`views`, per Placement name, in the order seen)."""

    def __init__(self, client: AsyncClient, ns: str) -> None:
        self._client, self._ns = client, ns
        self._pages: dict[str, dict[str, Any]] = {}
        self.views: dict[str, list[frozenset[str]]] = defaultdict(list)
        self._task: asyncio.Task[None] | None = None

    def _record(self, placement: str) -> None:
        self.views[placement].append(
            frozenset(
                d["clusterName"]
                for page in self._pages.values()
                if (page["metadata"].get("labels") or {}).get(PLACEMENT_LABEL) == placement
                for d in (page.get("status") or {}).get("decisions", [])
            )
        )

    async def _follow(self, version: str | None) -> None:
        async for kind, page in self._client.watch(DECISION, namespace=self._ns, resource_version=version):
            body = page.to_dict()
            name = body["metadata"]["name"]
            before = (self._pages.get(name, {}).get("metadata", {}).get("labels") or {}).get(PLACEMENT_LABEL)
            if kind == "DELETED":
                self._pages.pop(name, None)
            else:
                self._pages[name] = body
            for placement in {before, (body["metadata"].get("labels") or {}).get(PLACEMENT_LABEL)} - {None}:
                self._record(placement)

    async def __aenter__(self) -> DecisionReader:
        listed = self._client.list(DECISION, namespace=self._ns)
        self._pages = {p.metadata.name: p.to_dict() async for p in listed}
        for placement in {(p["metadata"].get("labels") or {}).get(PLACEMENT_LABEL) for p in self._pages.values()}:
            if placement is not None:
                self._record(placement)
        self._task = asyncio.create_task(self._follow(listed.resourceVersion))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await asyncio.sleep(0.5)  # the last events reach the reader
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def vanished(self, placement: str, steady: set[str]) -> list[list[str]]:
        """The views in which a `steady` cluster (one no decision deselected once it was selected) had been on
        some page of the Placement before and was on none: what a reader must never see."""
        shown: set[str] = set()
        found = []
        for view in self.views[placement]:
            shown |= view & steady
            if shown - view:
                found.append(sorted(shown - view))
        return found


def steady_clusters(decisions: Sequence[set[str]]) -> set[str]:
    """The clusters that, from the first decision of a sequence that has them, are in every later one: those no
    decision ever deselected, which a reader must find on some page from the moment it first finds them."""
    first: dict[str, int] = {}
    for index, chosen in enumerate(decisions):
        for cluster in chosen:
            first.setdefault(cluster, index)
    return {cluster for cluster, index in first.items() if all(cluster in later for later in decisions[index:])}
