"""The live what-if on a runtime that replayed the examples: each kind's decision next to the current one, and the
runtime left exactly as it was."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from engine.runtime.whatif import changes, what_if
from streams.replay import Replayer
from streams.settings import Settings
from streams.whatif import WhatIfError, subject_event

EXAMPLES = Path(__file__).resolve().parents[3] / "streams" / "examples"


@pytest.fixture(scope="module")
def replayed() -> Replayer:
    replayer = Replayer(Settings(), io.BytesIO(), queue_config=EXAMPLES / "queues.yaml")
    replayer.run(io.BytesIO((EXAMPLES / "events.jsonl").read_bytes()))
    return replayer


def _documents(name: str) -> list[dict[str, Any]]:
    return [body for body in yaml.safe_load_all((EXAMPLES / name).read_text()) if body]


def _state(replayer: Replayer) -> bytes:
    runtime = replayer.runtime
    dumped = {key: runtime.engine_for(key).dump_state(state) for key, state in sorted(runtime.states.items())}
    return orjson.dumps(dumped, default=str)


def _ask(replayer: Replayer, body: dict[str, Any]) -> dict[str, Any]:
    now: datetime = replayer.now
    key, event = subject_event(orjson.dumps(body), now)
    answer = what_if(replayer.runtime, key, event, now)
    assert answer is not None
    return answer


def test_a_placement_would_get_one_cluster_of_its_two(replayed: Replayer) -> None:
    before = _state(replayed)
    (placement,) = _documents("placement.yaml")
    placement["spec"]["numberOfClusters"] = 1
    answer = _ask(replayed, placement)
    assert answer["subject"] == "Placement/apps/web" and answer["exists"]
    assert len(answer["current"]["clusters"]) == 2
    assert answer["decision"]["clusters"][0] in answer["current"]["clusters"]
    assert answer["changes"]["clusters"]["removed"] and not answer["changes"]["clusters"]["added"]
    assert answer["explanation"]["selected"] == answer["decision"]["clusters"]
    assert _state(replayed) == before


def test_a_new_application_would_go_to_its_queue(replayed: Replayer) -> None:
    before = _state(replayed)
    pod = _documents("pods.yaml")[0]
    pod["metadata"]["labels"]["applicationId"] = "app-new"
    answer = _ask(replayed, pod)
    assert answer["subject"] == "Application/default"
    assert answer["decision"] == {"application": "app-new", "queue": "root.analytics", "rule": "provided"}
    assert answer["current"] is None
    assert "app-new" in answer["explanation"]["applications"]
    assert _state(replayed) == before


def test_a_rule_with_fewer_advisors_would_ask_only_those(replayed: Replayer) -> None:
    before = _state(replayed)
    (rule,) = _documents("placementrule.yaml")
    rule["spec"]["advisors"] = rule["spec"]["advisors"][:1]
    answer = _ask(replayed, rule)
    assert answer["changes"]["advisors"] == {"added": [], "removed": ["cpu"]}
    assert _state(replayed) == before


def test_inventory_is_not_a_subject() -> None:
    with pytest.raises(WhatIfError, match="not a subject"):
        subject_event(b"kind: ManagedCluster\nmetadata: {name: c1}\n", datetime(2026, 1, 1))
    with pytest.raises(WhatIfError, match="2 documents"):
        subject_event(b"kind: Placement\n---\nkind: Placement\n", datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("current", "decision", "expected"),
    [
        ({"clusters": ["a", "b"]}, {"clusters": ["b", "c"]}, {"clusters": {"added": ["c"], "removed": ["a"]}}),
        (None, {"queue": "root.x"}, {"queue": {"from": None, "to": "root.x"}}),
        ({"queue": "root.x"}, {"queue": "root.x"}, {}),
        (None, {"clusters": ["a"]}, {"clusters": {"added": ["a"], "removed": []}}),
        ({"clusters": ["a"]}, None, {"clusters": {"added": [], "removed": ["a"]}}),
    ],
)
def test_changes(current: dict[str, Any] | None, decision: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert changes(current, decision) == expected
