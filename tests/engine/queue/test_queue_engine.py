"""The QueueEngine as a SubjectEngine: events in, decision records out (spec A5, A8, B), state round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel
from queue_testkit import load

from engine.core import ConfiguredEngine, EngineContext, InventoryAwareEngine, SubjectEngine, TimedEngine
from engine.errors import InvalidStateError
from engine.inventory import Inventory
from engine.queue.engine import QueueEngine
from engine.queue.state import PartitionState
from engine.runtime import InputRecord, OutputRecord, Runtime
from topics.codec import DecodedEvent, decode_event, encode_event
from topics.events import EVENT_KINDS
from topics.names import TopicRole
from topics.queue import ApplicationCompleted, ApplicationPlaced, ApplicationRejected, ApplicationSubmitted

NOW = datetime(2024, 1, 1, tzinfo=UTC)
KEY = "Application/default"
ENGINE = QueueEngine()


def _event(kind: str, data: BaseModel, key: str = KEY) -> DecodedEvent:
    raw = encode_event(kind_name=kind, data=data, subject=key, event_id="e-1", time=NOW)
    return decode_event(raw, EVENT_KINDS[kind].topic)


def _ctx(config: Any) -> EngineContext:
    """The context of a call, with `config` made the engine's active configuration (None: none)."""
    ENGINE.configure(config)
    return EngineContext(now=NOW, inventory=Inventory())


def _submitted(app_id: str = "app-1", **fields: Any) -> DecodedEvent:
    return _event("application.submitted", ApplicationSubmitted(application_id=app_id, **fields))


def test_engine_satisfies_the_protocol() -> None:
    engine: SubjectEngine[PartitionState] = ENGINE
    assert engine.KIND == "Application"
    assert frozenset({"application.submitted", "application.completed"}) == engine.EVENTS


def test_submission_emits_placed_and_keeps_state() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    step = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="newq"), _ctx(config))
    assert step.redecide is False
    assert len(step.emits) == 1
    emit = step.emits[0]
    assert emit.kind == "application.placed"
    assert emit.data == ApplicationPlaced(
        application_id="app-1", partition="default", queue="root.newq", rule="provided", created=True
    )
    assert step.state is not None and step.state.applications["app-1"].queue == "root.newq"


def test_rejection_emits_rejected_with_the_reason() -> None:
    config = load(rules=[{"name": "provided"}], queues=[{"name": "root", "queues": [{"name": "q"}]}])
    step = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="q"), _ctx(config))
    assert step.state is None
    assert [emit.kind for emit in step.emits] == ["application.rejected"]
    assert step.emits[0].data == ApplicationRejected(
        application_id="app-1",
        partition="default",
        reason="failed to place application app-1: application rejected: no placement rule matched",
    )


@pytest.mark.parametrize(
    ("key", "partition", "config_partition", "reason"),
    [
        (
            "Application/gpu",
            "gpu",
            "default",
            "Failed to add application app-1 to partition gpu, partition doesn't exist",
        ),
        (KEY, "default", "gpu", "Failed to add application app-1 to partition default, partition doesn't exist"),
    ],
)
def test_unknown_partition_is_rejected(key: str, partition: str, config_partition: str, reason: str) -> None:
    config = load(partition=config_partition)
    event = _event(
        "application.submitted", ApplicationSubmitted(application_id="app-1", partition=partition, user="a"), key
    )
    step = ENGINE.on_event(key, None, event, _ctx(config))
    assert step.emits[0].data == ApplicationRejected(application_id="app-1", partition=partition, reason=reason)


def test_no_configuration_rejects_with_the_partition_message() -> None:
    step = ENGINE.on_event(KEY, None, _submitted(user="alice"), _ctx(None))
    assert step.emits[0].data == ApplicationRejected(
        application_id="app-1",
        partition="default",
        reason="Failed to add application app-1 to partition default, partition doesn't exist",
    )


@pytest.mark.parametrize("partition", ["", "DEFAULT", "Default"])
def test_partition_names_match_as_configured(partition: str) -> None:
    config = load()
    event = _event("application.submitted", ApplicationSubmitted(application_id="a", partition=partition, user="alice"))
    step = ENGINE.on_event(KEY, None, event, _ctx(config))
    assert step.emits[0].kind == "application.placed"
    assert isinstance(step.emits[0].data, ApplicationPlaced) and step.emits[0].data.partition == "default"


def test_payload_partition_differing_from_the_key_is_rejected() -> None:
    config = load()
    event = _event("application.submitted", ApplicationSubmitted(application_id="a", partition="gpu", user="alice"))
    step = ENGINE.on_event(KEY, None, event, _ctx(config))
    assert step.emits[0].kind == "application.rejected"
    assert isinstance(step.emits[0].data, ApplicationRejected)
    assert "gpu" in step.emits[0].data.reason and KEY in step.emits[0].data.reason


def test_completion_updates_state_silently() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    ctx = _ctx(config)
    state = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="root.t.q"), ctx).state
    done = ENGINE.on_event(
        KEY, state, _event("application.completed", ApplicationCompleted(application_id="app-1")), ctx
    )
    assert done.emits == ()
    assert done.state is None
    ignored = ENGINE.on_event(
        KEY, state, _event("application.completed", ApplicationCompleted(application_id="x")), ctx
    )
    assert ignored.state == state and ignored.emits == ()


def test_redelivered_submission_reemits_the_same_decision() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    ctx = _ctx(config)
    first = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="newq"), ctx)
    again = ENGINE.on_event(KEY, first.state, _submitted(user="alice", queue="newq"), ctx)
    assert again.emits == first.emits
    other = ENGINE.on_event(KEY, first.state, _submitted(user="alice", queue="sandbox"), ctx)
    assert other.emits[0].data == ApplicationRejected(
        application_id="app-1",
        partition="default",
        reason="adding application app-1 to partition default, but application already existed",
    )


def test_on_config_applies_reloads_and_forgets_dropped_partitions() -> None:
    config = load(queues=[{"name": "root", "submitacl": "*", "queues": [{"name": "q"}]}], rules=[{"name": "provided"}])
    state = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="q"), _ctx(config)).state
    assert state is not None
    drained = ENGINE.on_config(KEY, state, _ctx(load(queues=[], rules=[{"name": "provided"}])))
    assert drained.state is not None and drained.state.queues["root.q"].draining
    assert ENGINE.on_config(KEY, state, _ctx(load(partition="gpu"))).state is None
    assert ENGINE.on_config(KEY, state, _ctx(None)).state == state


def test_passive_methods_leave_state_alone() -> None:
    state = PartitionState()
    ctx = _ctx(load())
    assert ENGINE.decide(KEY, state, ctx).state is state
    assert ENGINE.on_deleted(KEY, state, ctx).state is state
    ENGINE.track(KEY, state)
    # no timers (cleanup is synchronous with completions) and no inventory: those capabilities are absent
    assert not isinstance(ENGINE, TimedEngine) and not isinstance(ENGINE, InventoryAwareEngine)
    assert isinstance(ENGINE, ConfiguredEngine)


def test_state_round_trips_through_json() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    ctx = _ctx(config)
    state = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="root.a.b"), ctx).state
    assert state is not None
    dumped = ENGINE.dump_state(state)
    assert dumped == {
        "queues": {"root.a": {"parent": True}, "root.a.b": {"parent": False}},
        "applications": {
            "app-1": {
                "queue": "root.a.b",
                "rule": "provided",
                "created": True,
                "fingerprint": state.applications["app-1"].fingerprint,
            }
        },
        "configuredInUse": {"root": {"parent": True, "submitAcl": "*"}},
    }
    assert ENGINE.load_state(dumped) == state


@pytest.mark.parametrize(
    "raw",
    [
        {"queues": []},
        {"queues": {"root.a": "x"}},
        {"queues": {"root.a": {"parent": "yes"}}},
        {"queues": {"root.a": {"parent": True, "submitAcl": "a b c"}}},
        {"applications": {"a": {"queue": 1}}},
        {"applications": {"a": {"queue": "q", "rule": "r", "created": 1, "fingerprint": "f"}}},
        {"applications": []},
        {"configuredInUse": 5},
    ],
)
def test_garbage_state_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidStateError):
        ENGINE.load_state(raw)


def _fold(parts: Any, state: PartitionState | None = None) -> PartitionState | None:
    for part, raw in parts:
        state = ENGINE.load_part(state, part, raw)
    return state


def test_state_changes_write_one_entry_per_changed_application() -> None:
    ctx = _ctx(load(rules=[{"name": "provided", "create": True}]))
    one = ENGINE.on_event(KEY, None, _submitted(user="alice", queue="root.a.b"), ctx).state
    two = ENGINE.on_event(KEY, one, _submitted("app-2", user="bob", queue="root.a.b"), ctx).state
    done = ENGINE.on_event(KEY, two, _event("application.completed", ApplicationCompleted(application_id="app-1")), ctx)
    assert one is not None and two is not None and done.state is not None
    first = list(ENGINE.state_changes(None, one))
    assert [part for part, _ in first] == ["", "apps/app-1"]
    assert first[0][1] == {
        "queues": {"root.a": {"parent": True}, "root.a.b": {"parent": False}},
        "configuredInUse": {"root": {"parent": True, "submitAcl": "*"}},
    }
    second = list(ENGINE.state_changes(one, two))
    assert second == [("apps/app-2", ENGINE.dump_state(two)["applications"]["app-2"])]  # the queue existed
    assert list(ENGINE.state_changes(two, done.state)) == [("apps/app-1", None)]  # root.a.b still holds app-2
    assert list(ENGINE.state_changes(done.state, None)) == [("", None), ("apps/app-2", None)]
    # restoring the entries in the order they were written rebuilds each state
    assert _fold(first) == one
    assert _fold(first + second) == two
    assert _fold(first + second + [("apps/app-1", None)]) == done.state
    assert _fold([("", None), ("apps/app-2", None)], done.state) is None


@pytest.mark.parametrize(
    ("part", "raw"),
    [("queues", {}), ("apps/", {}), ("apps/a", {"queue": 1}), ("", {"queues": []})],
    ids=["unknown-part", "empty-app-id", "bad-application", "bad-queue-records"],
)
def test_unreadable_state_parts_are_refused(part: str, raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidStateError):
        ENGINE.load_part(None, part, raw)


def test_runtime_writes_and_restores_application_entries() -> None:
    """Through the runtime: a batch writes only what it changed, and the entries restore the partition."""
    config = load(rules=[{"name": "provided", "create": True}])
    runtime = Runtime([QueueEngine()], config=config)
    changelog: list[OutputRecord] = []
    for offset, app in enumerate(("app-1", "app-2")):
        event = _submitted(app, user="alice", queue="root.a.b")
        value = encode_event(kind_name="application.submitted", data=event.data, subject=KEY, event_id=app, time=NOW)
        record = InputRecord(TopicRole.SUBMISSIONS, 0, offset, KEY.encode(), value)
        changelog += [o for o in runtime.process([record], NOW) if o.topic is TopicRole.CHANGELOG]
    keys = [record.key for record in changelog]
    assert keys == [KEY.encode(), f"{KEY}/apps/app-1".encode(), f"{KEY}/apps/app-2".encode()]
    assert {record.subject for record in changelog} == {KEY}  # routed with the subject, to its partition
    fresh = Runtime([QueueEngine()], config=config)
    for record in changelog:
        assert record.key is not None
        fresh.restore(record.key.decode(), record.value)
    assert fresh.states == runtime.states
    with pytest.raises(InvalidStateError):
        fresh.restore("Application/default/queues", b'{"kind": "Application", "v": 1, "state": {}}')
