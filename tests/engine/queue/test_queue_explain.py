"""QueueEngine.explain: a partition's dynamic and draining queues, its running applications by queue and the rule
chain of the active configuration, built from state without changing it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from pydantic import BaseModel
from queue_testkit import STANDARD_QUEUES, load

from engine.core import EngineContext, ExplainingEngine
from engine.inventory import Inventory
from engine.queue.config import QueueConfig
from engine.queue.engine import QueueEngine, apply_config
from engine.queue.state import PartitionState
from topics.codec import DecodedEvent, decode_event, encode_event
from topics.events import EVENT_KINDS
from topics.queue import ApplicationCompleted, ApplicationSubmitted

NOW = datetime(2024, 1, 1, tzinfo=UTC)
KEY = "Application/default"
RULES = [
    {"name": "provided", "create": True},
    {"name": "user", "create": True, "parent": {"name": "fixed", "value": "users"}},
]


def _event(kind: str, data: BaseModel) -> DecodedEvent:
    raw = encode_event(kind_name=kind, data=data, subject=KEY, event_id="e-1", time=NOW)
    return decode_event(raw, EVENT_KINDS[kind].topic)


def _run(config: QueueConfig, events: list[tuple[str, dict[str, Any]]]) -> PartitionState:
    engine, state = QueueEngine(config), None
    ctx = EngineContext(now=NOW, inventory=Inventory())
    for kind, fields in events:
        model = ApplicationSubmitted if kind == "submitted" else ApplicationCompleted
        state = engine.on_event(KEY, state, _event(f"application.{kind}", model(**fields)), ctx).state
    assert state is not None
    return state


def test_the_queue_engine_explains() -> None:
    assert isinstance(QueueEngine(), ExplainingEngine)


@pytest.mark.parametrize(
    ("events", "queues", "applications"),
    [
        (
            [("submitted", {"application_id": "a1", "user": "alice", "queue": "root.sandbox"})],
            {"root.sandbox": ["a1"]},
            {"a1": {"queue": "root.sandbox", "rule": "provided", "created": False}},
        ),
        (
            [
                ("submitted", {"application_id": "a1", "user": "bob"}),
                ("submitted", {"application_id": "a2", "user": "bob"}),
                ("submitted", {"application_id": "a3", "user": "carol", "queue": "root.newq"}),
            ],
            {"root.newq": ["a3"], "root.users.bob": ["a1", "a2"]},
            {
                "a1": {"queue": "root.users.bob", "rule": "user", "created": True},
                "a2": {"queue": "root.users.bob", "rule": "user", "created": False},
                "a3": {"queue": "root.newq", "rule": "provided", "created": True},
            },
        ),
        (
            [
                ("submitted", {"application_id": "a1", "user": "bob"}),
                ("submitted", {"application_id": "a2", "user": "dave"}),
                ("completed", {"application_id": "a1"}),
            ],
            {"root.users.dave": ["a2"]},
            {"a2": {"queue": "root.users.dave", "rule": "user", "created": True}},
        ),
    ],
)
def test_explain_lists_running_applications_their_queues_and_the_dynamic_queues(
    events: list[tuple[str, dict[str, Any]]], queues: dict[str, list[str]], applications: dict[str, Any]
) -> None:
    config = load(rules=RULES)
    state = _run(config, events)
    report = QueueEngine(config).explain(KEY, state, EngineContext(now=NOW, inventory=Inventory()))
    assert report["subject"] == KEY and report["partition"] == "default"
    assert report["applications"] == applications
    assert report["queues"] == queues
    dynamic = {q for q in queues if q not in {"root.sandbox"}}
    assert set(report["dynamicQueues"]) == dynamic
    assert report["configuration"]["rules"][0].startswith("provided(create=true")
    assert report["configuration"]["rules"][-1].startswith("recovery(")
    assert orjson.loads(orjson.dumps(report)) == report  # JSON as it is


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, None),
        ("other-partition", {"partitionConfigured": False, "rules": []}),
        ("same", {"partitionConfigured": True, "rules": 3}),
    ],
)
def test_explain_says_which_configuration_places_into_the_partition(config: str | None, expected: Any) -> None:
    active = load(rules=RULES)
    state = _run(active, [("submitted", {"application_id": "a1", "user": "bob"})])
    chosen = {None: None, "other-partition": load(rules=RULES, partition="gpu"), "same": active}[config]
    report = QueueEngine(chosen).explain(KEY, state, EngineContext(now=NOW, inventory=Inventory()))
    if expected is None:
        assert report["configuration"] is None
        return
    assert report["configuration"]["path"] == "queues.yaml"
    assert report["configuration"]["partitionConfigured"] is expected["partitionConfigured"]
    rules = report["configuration"]["rules"]
    assert (len(rules) if isinstance(expected["rules"], int) else rules) == expected["rules"]


def test_a_queue_dropped_by_a_reload_shows_as_draining_while_it_holds_applications() -> None:
    queues = [{"name": "root", "submitacl": "*", "queues": [{"name": "old"}, {"name": "default"}]}]
    before = load(queues=queues, rules=[{"name": "provided"}])
    state = _run(before, [("submitted", {"application_id": "a1", "user": "bob", "queue": "root.old"})])
    after = load(queues=STANDARD_QUEUES, rules=[{"name": "provided"}])
    reloaded = apply_config(after, "default", state)
    assert reloaded is not None
    report = QueueEngine(after).explain(KEY, reloaded, EngineContext(now=NOW, inventory=Inventory()))
    assert report["dynamicQueues"]["root.old"] == {"parent": False, "draining": True}
    assert report["queues"] == {"root.old": ["a1"]}


def test_explain_changes_nothing() -> None:
    config = load(rules=RULES)
    state = _run(config, [("submitted", {"application_id": "a1", "user": "bob"})])
    ctx = EngineContext(now=NOW, inventory=Inventory())
    first = QueueEngine(config).explain(KEY, state, ctx)
    assert QueueEngine(config).explain(KEY, state, ctx) == first
    assert set(state.applications) == {"a1"}
