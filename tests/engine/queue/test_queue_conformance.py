"""The published conformance examples, kept in this project's own table format
(`queue_conformance_cases.json`): single submissions and operation sequences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from queue_testkit import existing_queues, finish, submission

from engine.errors import QueueConfigError
from engine.queue.config import QueueConfig, load_queue_config
from engine.queue.engine import place
from engine.queue.placement import Placed, Rejected
from engine.queue.state import PartitionState

_TABLE = json.loads((Path(__file__).parent / "queue_conformance_cases.json").read_text())
_CASES: list[dict[str, Any]] = _TABLE["cases"]


def _file_text(case: dict[str, Any]) -> str:
    if "file_text" in case:
        return str(case["file_text"])
    queues = _TABLE["trees"][case["tree"]] if "tree" in case else case["queues"]
    partition = {"name": "default", "queues": queues, "placementrules": case["rules"]}
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


def _check_outcome(config: QueueConfig, state: PartitionState | None, app: dict[str, Any], want: dict[str, Any]):
    sub = submission(app.get("app_id", "app-1"), app["user"], tuple(app["groups"]), app["requested_queue"], app["tags"])
    new_state, outcome = place(config, "default", state, sub)
    if "queue" in want:
        assert isinstance(outcome, Placed), outcome
        assert outcome.queue == want["queue"]
    else:
        assert want == {"rejected": True}
        assert isinstance(outcome, Rejected), outcome
        assert outcome.reason
    return new_state


@pytest.mark.parametrize("case", _CASES, ids=[f"{case['ref']}-{case['title'][:50]}" for case in _CASES])
def test_conformance_case(case: dict[str, Any]) -> None:
    text = _file_text(case)
    want_invalid = case.get("want", {}).get("invalid_config", False)
    if want_invalid:
        with pytest.raises(QueueConfigError) as error:
            load_queue_config(text, "queues.yaml")
        assert str(error.value)
        return
    config = load_queue_config(text, "queues.yaml")
    if "ops" not in case:
        _check_outcome(config, None, case["submit"], case["want"])
        return
    state: PartitionState | None = None
    for op in case["ops"]:
        want = op["want"]
        if op["do"] == "submit":
            state = _check_outcome(config, state, op, want)
            continue
        state, removed = finish(config, state, op["app_id"])
        if want.get("ignored"):
            assert removed is None
        else:
            assert removed is not None
            assert list(removed) == want["deleted"]
        present = existing_queues(config, state)
        assert set(want.get("exist", ())) <= present
        assert not set(want.get("gone", ())) & present
