"""`placement-stream apply -f` / `delete -f` on a real broker: the upstream-shaped examples (OCM documentation's
ManagedClusters and Placement, a hybrid PlacementRule, YuniKorn pods and a Job) are published as exactly the
records `--dry-run` prints, on the right topics with the right keys, and reported document by document."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka_support import EXAMPLES, KafkaWorld, Record

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FILES = [str(EXAMPLES / name) for name in ("clusters.yaml", "placement.yaml", "placementrule.yaml", "pods.yaml")]
TIME = "2026-11-23T10:00:00Z"


def cli(world: KafkaWorld, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **world.env()}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    command = [sys.executable, "-m", "cli", *args, "--time", TIME]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def by_topic(lines: list[dict[str, Any]]) -> dict[str, list[tuple[str, Any]]]:
    grouped: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for line in lines:
        grouped[line["topic"]].append((line["key"], line["value"]))
    return dict(grouped)


def per_key(items: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    """Each key's values in order: Kafka keeps order per key (per partition), not across partitions."""
    keyed: dict[str, list[Any]] = defaultdict(list)
    for key, value in items:
        keyed[key].append(value)
    return dict(keyed)


def received(records: list[Record]) -> list[tuple[str, Any]]:
    assert all(not r.headers for r in records)
    return [(r.key.decode(), None if r.value is None else orjson.loads(r.value)) for r in records if r.key]


@pytest.mark.parametrize(
    ("verb", "files", "expected_types"),
    [
        (
            "apply",
            FILES,
            ["managedclusterset.applied.v1", "managedclustersetbinding.applied.v1"]
            + ["managedcluster.applied.v1"] * 4
            + ["placement.applied.v1", "placementrule.applied.v1"]
            + ["application.submitted.v1"] * 3,
        ),
        ("delete", FILES[:2], [None] * 6 + ["placement.deleted.v1"]),
    ],
)
async def test_apply_publishes_exactly_what_dry_run_prints(
    world: KafkaWorld, verb: str, files: list[str], expected_types: list[str | None]
) -> None:
    paths = [arg for name in files for arg in ("-f", name)]
    printed = cli(world, verb, "--dry-run", *paths)
    assert printed.returncode == 0, printed.stderr
    expected = [orjson.loads(line) for line in printed.stdout.splitlines()]
    assert [None if e["value"] is None else e["value"]["type"] for e in expected] == expected_types

    done = cli(world, verb, *paths)
    assert done.returncode == 0, done.stderr
    reports = done.stdout.splitlines()
    assert len(reports) == len(expected)
    assert all(
        line.endswith("published" if verb == "apply" else "deleted") or "(application" in line for line in reports
    )
    if verb == "apply":
        assert "placement.cluster.open-cluster-management.io/web published" in reports
        assert "job.batch/nightly-report published (application app-3)" in reports

    wanted = by_topic(expected)
    await asyncio.sleep(1)  # anything sent twice would be there by now
    for topic, items in wanted.items():
        count = len(items)
        got = received(await world.collect(topic, lambda rs, count=count: len(rs) >= count))
        assert len(got) == len(items), f"{topic}: exactly the records of the documents, no duplicates"
        assert per_key(got) == per_key(items), topic
    assert set(wanted) <= {world.topics.cluster_status, world.topics.submissions}
