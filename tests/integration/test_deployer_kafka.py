"""The example deployer on a real broker: its files always end equal to the last decisions on the topic.

Inventory and placements are published with `apply` (the YAML a user has), the processor decides, and the
deployer (`deployers.decision_files`) writes one YAML file per subject. Placements are created, changed and
deleted, with the deployer running and while it is stopped; after each step the files must equal what the
decisions topic says last for every subject (a deleted subject: no file).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kafka_support import KafkaWorld, Record, running

from cli.apply.command import ApplyRequest, plan, publish
from deployers.decision_files import DeployerConfig, deploy
from streams.settings import Settings

pytestmark = pytest.mark.integration

CLUSTERS = """
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: prod}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: prod, namespace: apps}
spec: {clusterSet: prod}
""" + "".join(
    f"""---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: cluster{i}
  labels: {{cluster.open-cluster-management.io/clusterset: prod, region: {region}}}
status: {{allocatable: {{cpu: "{4 * i}"}}}}
"""
    for i, region in enumerate(["us-east", "us-west", "eu-west", "us-east"], start=1)
)


def placement(name: str, generation: int, spec: str) -> str:
    return f"""
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {{name: {name}, namespace: apps, generation: {generation}}}
spec:
  clusterSets: [prod]
{spec}"""


WEB_TWO = placement("web", 1, "  numberOfClusters: 2")
WEB_ONE = placement("web", 2, "  numberOfClusters: 1")
GROUPED = placement(
    "rollout",
    1,
    """  decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 1
      decisionGroups:
        - groupName: canary
          groupClusterSelector: {labelSelector: {matchLabels: {region: us-east}}}""",
)
GONE = placement("gone", 1, "  numberOfClusters: 1")


async def apply(settings: Settings, tmp_path: Path, text: str, *, delete: bool = False) -> None:
    path = tmp_path / f"doc-{datetime.now(UTC).timestamp()}.yaml"
    path.write_text(text)
    planned = plan(ApplyRequest(paths=[str(path)], delete=delete))
    assert not [item.error for item in planned if item.error]
    assert await publish(planned, settings) == {}


def expected_files(records: list[Record]) -> dict[str, Any]:
    """Relative path -> document, from the last record of every Placement key (the test's own reading)."""
    last: dict[str, Any] = {}
    for record in records:
        key = record.key.decode() if record.key else ""
        if key.startswith("Placement/"):
            last[key] = None if record.value is None else orjson.loads(record.value)
    files = {}
    for key, value in last.items():
        if value is None or value["data"].get("deleted"):
            continue
        _, namespace, name = key.split("/")
        pages = value["data"]["placementDecisions"]
        files[f"placements/{namespace}/{name}.yaml"] = {"apiVersion": "v1", "kind": "List", "items": pages}
    return files


def files_in(root: Path) -> dict[str, Any]:
    return {str(path.relative_to(root)): yaml.safe_load(path.read_text()) for path in sorted(root.rglob("*.yaml"))}


async def settled(world: KafkaWorld, root: Path, until: Any, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until the topic shows `until` and the files equal the topic's last decisions; return the files."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        records = await world.collect(world.topics.decisions, until)
        expected = expected_files(records)
        if files_in(root) == expected:
            return expected
        if loop.time() > deadline:
            raise AssertionError(f"files {sorted(files_in(root))} never matched {sorted(expected)}")
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def deployer(world: KafkaWorld, root: Path) -> AsyncIterator[None]:
    stop, caught_up = asyncio.Event(), asyncio.Event()
    prefix = world.topics.decisions.removesuffix("placement.decisions")
    task = asyncio.create_task(deploy(DeployerConfig(world.bootstrap, root, prefix), stop, caught_up=caught_up))
    try:
        await asyncio.wait_for(caught_up.wait(), 30)
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def decided(records: list[Record], key: str) -> list[dict[str, Any]]:
    return [orjson.loads(r.value)["data"] for r in records if r.key == key.encode() and r.value is not None]


def tombstoned(key: str) -> Any:
    return lambda records: any(r.key == key.encode() and r.value is None for r in records)


def decided_again(key: str) -> Any:
    """The key was deleted (tombstone) and then decided anew."""

    def check(records: list[Record]) -> bool:
        mine = [r for r in records if r.key == key.encode()]
        gone = [i for i, r in enumerate(mine) if r.value is None]
        return bool(gone) and any(r.value is not None for r in mine[gone[-1] + 1 :])

    return check


async def test_files_follow_creates_changes_deletes_and_a_restart(world: KafkaWorld, tmp_path: Path) -> None:
    root = tmp_path / "deployed"
    settings = world.settings()
    async with running(settings):
        await apply(settings, tmp_path, CLUSTERS)
        async with deployer(world, root):
            await apply(settings, tmp_path, "\n---".join([WEB_TWO, GROUPED, GONE]))
            files = await settled(
                world, root, lambda rs: all(decided(rs, f"Placement/apps/{n}") for n in ("web", "rollout", "gone"))
            )
            assert sorted(files) == [
                "placements/apps/gone.yaml",
                "placements/apps/rollout.yaml",
                "placements/apps/web.yaml",
            ]
            assert sum(len(p["status"]["decisions"]) for p in files["placements/apps/web.yaml"]["items"]) == 2
            groups = {
                p["metadata"]["labels"].get("cluster.open-cluster-management.io/decision-group-name")
                for p in files["placements/apps/rollout.yaml"]["items"]
            }
            assert "canary" in groups and len(files["placements/apps/rollout.yaml"]["items"]) >= 2

            await apply(settings, tmp_path, WEB_ONE)  # a re-decision replaces the earlier one whole
            await apply(settings, tmp_path, GONE, delete=True)
            files = await settled(
                world,
                root,
                lambda rs: (
                    any(d.get("generation") == 2 for d in decided(rs, "Placement/apps/web"))
                    and tombstoned("Placement/apps/gone")(rs)
                ),
            )
            assert "placements/apps/gone.yaml" not in files
            assert sum(len(p["status"]["decisions"]) for p in files["placements/apps/web.yaml"]["items"]) == 1

        # while the deployer is down: one placement deleted, one created; the restart must catch both
        await apply(settings, tmp_path, GROUPED, delete=True)
        await apply(settings, tmp_path, GONE)
        before = (root / "placements/apps/web.yaml").stat().st_mtime_ns

        def both(records: list[Record]) -> bool:
            return bool(tombstoned("Placement/apps/rollout")(records) and decided_again("Placement/apps/gone")(records))

        await world.collect(world.topics.decisions, both)
        async with deployer(world, root):
            files = await settled(world, root, both)
        assert sorted(files) == ["placements/apps/gone.yaml", "placements/apps/web.yaml"]
        assert (root / "placements/apps/web.yaml").stat().st_mtime_ns == before, "an unchanged file is not rewritten"
