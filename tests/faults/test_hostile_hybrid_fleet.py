"""Hostile by size: valid hybrid PlacementRules over a fleet of 1,000 clusters, through `placement-stream replay`.

A rule with `replicas: 1` and no advisors is reduced one candidate per round; a status that carried every
round's ratings grew with the cube of the fleet and exhausted the processor's memory. Next to it, the same rule
with an advisor that never answers is finalised by force at its deadline over the same 1,000 candidates. The
replay runs in a child capped in address space, so a processor that grows past linear memory fails here
instead of in the machine. Asserted: the decisions, the records written and that every one fits a Kafka
record (not the time taken: speed is measured by `benchmarks/hybrid_fleet.py`).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from tests.faults.hostile_records import BASE_TIME, BROKER_MESSAGE_LIMIT, C, S, cluster, event

REPO = Path(__file__).resolve().parents[2]
FLEET = 1_000
MEMORY_LIMIT_BYTES = 2 * 1024**3
"""Address-space cap of the replay child: linear state for 1,000 candidates needs a small part of it."""
SELECTOR = {"matchLabels": {"hybrid-fleet": "yes"}}
RULES = {
    "PlacementRule/hostile/fleet": {"replicas": 1, "targetLabels": SELECTOR},
    "PlacementRule/hostile/silent": {"replicas": 1, "targetLabels": SELECTOR, "advisors": [{"name": "silent"}]},
}
LAST = f"hf-{FLEET - 1:04d}"
"""With no answers every rating is 0, so candidates fall in key order and the last one stays (H7, I2)."""


def _line(topic: str, key: str, value: dict[str, Any]) -> bytes:
    return orjson.dumps({"topic": topic, "key": key, "value": value})


def fleet_input(tmp: Path) -> Path:
    """The fleet, the two rules, then a timestamp past the silent rule's 30-s deadline."""
    lines = []
    for i in range(FLEET):
        data = cluster(f"hf-{i:04d}", {"hybrid-fleet": "yes"})
        lines.append(_line(C.value, f"ManagedCluster/hf-{i:04d}", event("managedcluster.applied", data)))
    for key, spec in RULES.items():
        _, namespace, name = key.split("/")
        rule = {"metadata": {"name": name, "namespace": namespace, "generation": 1}, "spec": spec}
        lines.append(_line(S.value, key, event("placementrule.applied", rule)))
    late = BASE_TIME + timedelta(seconds=31)
    lines.append(orjson.dumps({"timestamp": late.isoformat().replace("+00:00", "Z")}))
    path = tmp / "hybrid-fleet.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def test_rules_over_1000_candidates_decide_in_records_that_fit_kafka(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "streams", "replay", "--all", str(fleet_input(tmp_path))],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=600,
        preexec_fn=_capped,  # the child starts no threads before exec
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    lines = done.stdout.splitlines()
    records = [orjson.loads(line) for line in lines]
    kinds = [(r["key"], r["topic"], (r["value"] or {}).get("type")) for r in records]
    fleet, silent = RULES
    assert kinds == [
        (fleet, "placement.decisions", "placementrule.decided.v1"),
        (fleet, "placement.state-changelog", None),
        (silent, "placement.advisor-requests", "candidates.proposed.v1"),
        (silent, "placement.decisions", "placementrule.decided.v1"),
        (silent, "placement.state-changelog", None),
        (silent, "placement.decisions", "placementrule.decided.v1"),  # at the deadline (I2)
        (silent, "placement.state-changelog", None),
    ], "the rule without advisors asks nobody (H6); the silent advisor is asked once"
    largest = max(len(line) for line in lines)
    assert largest < BROKER_MESSAGE_LIMIT, f"a record of {largest} bytes does not fit a Kafka record"

    decided = {r["key"]: r["value"]["data"] for r in records if r["topic"] == "placement.decisions"}
    assert [d["name"] for d in decided[fleet]["decisions"]] == [LAST]
    assert [d["name"] for d in decided[silent]["decisions"]] == [LAST]
    assert decided[fleet]["round"] == FLEET, "one round per removal, run back to back"
    assert decided[silent]["round"] == 1, "forced finalisation stays in its round"
    for data in decided.values():
        assert len(data["reductions"]) == FLEET - 1
        assert len(data["lastReduction"]["ratings"]) == 2, "only the latest round keeps its ratings"
    proposal = next(r["value"]["data"] for r in records if r["topic"] == "placement.advisor-requests")
    assert (proposal["round"], len(proposal["candidates"])) == (1, FLEET)
