"""Completion cleanup (spec B4, M) and configuration reloads (A5, N) on partition state."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import existing_queues, finish, load, submit

from engine.queue.config import QueueConfig
from engine.queue.engine import apply_config
from engine.queue.placement import Placed, Rejected
from engine.queue.state import PartitionState, dump_partition_state, load_partition_state

FORCE = {"application.create.force": "true"}
PROVIDED_CREATE = [{"name": "provided", "create": True}]


def _placed(config: QueueConfig, state: PartitionState | None, **fields: Any) -> PartitionState:
    new_state, outcome = submit(config, state, **fields)
    assert isinstance(outcome, Placed), outcome
    assert new_state is not None
    return new_state


# --- M: completion -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("queues_and_apps", "completed", "removed"),
    [
        ([("a1", "root.team.q")], "a1", ("root.team.q", "root.team")),
        ([("a1", "root.sandbox")], "a1", ()),
        ([("a1", "root.users.bob")], "a1", ("root.users.bob",)),
        ([("a1", "root.team.q"), ("a2", "root.team.q")], "a1", ()),
        ([("a1", "root.team.a"), ("a2", "root.team.b")], "a1", ("root.team.a",)),
        ([("a1", "root.x.y.z")], "a1", ("root.x.y.z", "root.x.y", "root.x")),
    ],
)
def test_completion_removes_empty_dynamic_queues_upwards(
    queues_and_apps: list[tuple[str, str]], completed: str, removed: tuple[str, ...]
) -> None:
    config = load(rules=PROVIDED_CREATE)
    state: PartitionState | None = None
    for app_id, queue in queues_and_apps:
        state = _placed(config, state, app_id=app_id, queue=queue)
    state, gone = finish(config, state, completed)
    assert gone == removed
    assert not set(removed) & existing_queues(config, state)


def test_unknown_completion_is_ignored() -> None:
    config = load(rules=PROVIDED_CREATE)
    state = _placed(config, None, queue="root.q")
    assert finish(config, state, "never") == (state, None)
    assert finish(config, None, "never") == (None, None)


def test_recovery_queue_goes_with_its_last_application_and_comes_back() -> None:
    config = load(rules=[{"name": "provided"}])
    state = _placed(config, None, app_id="f1", queue="missing", tags=FORCE)
    state, gone = finish(config, state, "f1")
    assert gone == ("root.@recovery@",)
    assert state is None
    state = _placed(config, state, app_id="f2", queue="missing", tags=FORCE)
    assert "root.@recovery@" in state.queues


def test_dynamic_queue_persists_for_create_false_rules_until_empty() -> None:
    user_rule = {
        "name": "user",
        "create": True,
        "filter": {"users": ["bob"]},
        "parent": {"name": "fixed", "value": "root.users"},
    }
    config = load(rules=[{"name": "provided"}, user_rule])
    state = _placed(config, None, app_id="app-1", user="bob")
    assert state.applications["app-1"].queue == "root.users.bob"
    state = _placed(config, state, app_id="app-2", user="carol", queue="root.users.bob")
    assert state.applications["app-2"].queue == "root.users.bob"
    state, gone = finish(config, state, "app-1")
    assert gone == ()
    state, gone = finish(config, state, "app-2")
    assert gone == ("root.users.bob",)
    _, outcome = submit(config, state, app_id="app-3", user="carol", queue="root.users.bob")
    assert outcome == Placed("root.default", "default", False)


# --- N: reload --------------------------------------------------------------------------------------------------


def _queues(*children: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "root", "submitacl": "*", "queues": [{"name": "default"}, *children]}]


def test_dropped_configured_queue_drains_and_goes_with_its_last_application() -> None:
    old = load(_queues({"name": "team", "queues": [{"name": "a"}, {"name": "b"}]}), PROVIDED_CREATE)
    state = _placed(old, None, app_id="a1", queue="root.team.a")
    new = load(_queues(), PROVIDED_CREATE)
    state = apply_config(new, "default", state)
    assert state is not None
    assert {path for path, record in state.queues.items() if record.draining} == {"root.team", "root.team.a"}
    assert "root.team.b" not in existing_queues(new, state)
    # vetting skips a draining queue; nothing can be created below it
    _, outcome = submit(new, state, app_id="a2", queue="root.team.a")
    assert outcome == Placed("root.default", "default", False)
    _, outcome = submit(new, state, app_id="a3", queue="root.team.c")
    assert outcome == Rejected(
        "failed to create rule based queue root.team.c for application a3: "
        "cannot add a child queue when queue is marked for deletion: root.team"
    )
    state, gone = finish(new, state, "a1")
    assert gone == ("root.team.a", "root.team")
    assert state is None


def test_empty_dropped_queues_are_removed_at_reload() -> None:
    old = load(_queues({"name": "team", "queues": [{"name": "a"}]}, {"name": "keep"}), PROVIDED_CREATE)
    state = _placed(old, None, app_id="a1", queue="root.keep")
    new = load(_queues({"name": "keep"}), PROVIDED_CREATE)
    state = apply_config(new, "default", state)
    assert state is not None
    assert not state.queues
    assert existing_queues(new, state) == {"root", "root.default", "root.keep"}


def test_draining_queue_returns_to_running_when_configured_again() -> None:
    with_q = load(_queues({"name": "q"}), [{"name": "provided"}])
    state = _placed(with_q, None, app_id="a1", queue="q")
    state = apply_config(load(_queues(), [{"name": "provided"}]), "default", state)
    assert state is not None and state.queues["root.q"].draining
    state = apply_config(with_q, "default", state)
    assert state is not None and "root.q" not in state.queues
    state, outcome = submit(with_q, state, app_id="a2", queue="q")
    assert outcome == Placed("root.q", "provided", False)
    state, gone = finish(with_q, state, "a1")
    assert gone == ()


def test_dynamic_queue_becomes_configured_and_others_stay() -> None:
    old = load(_queues(), PROVIDED_CREATE)
    state = _placed(old, None, app_id="a1", queue="root.dyn")
    state = _placed(old, state, app_id="a2", queue="root.other.leaf")
    new = load(_queues({"name": "dyn"}), PROVIDED_CREATE)
    state = apply_config(new, "default", state)
    assert state is not None
    assert set(state.queues) == {"root.other", "root.other.leaf"}
    state, gone = finish(new, state, "a1")
    assert gone == ()
    state, gone = finish(new, state, "a2")
    assert gone == ("root.other.leaf", "root.other")


def test_updated_acls_apply_after_reload() -> None:
    old = load(_queues({"name": "q", "submitacl": "alice"}), [{"name": "provided"}])
    new = load([{"name": "root", "queues": [{"name": "q", "submitacl": "bob"}]}], [{"name": "provided"}])
    _, outcome = submit(old, None, user="bob", queue="q")
    assert outcome == Placed("root.q", "provided", False)
    _, outcome = submit(new, apply_config(new, "default", None), user="alice", queue="q")
    assert isinstance(outcome, Rejected)


def test_draining_queue_keeps_its_acl_for_queues_below_it() -> None:
    old = load([{"name": "root", "queues": [{"name": "team", "parent": True, "submitacl": "alice"}]}], PROVIDED_CREATE)
    state = _placed(old, None, app_id="a1", user="alice", queue="root.team.dyn")
    new = load([{"name": "root", "queues": [{"name": "other"}]}], PROVIDED_CREATE)
    state = apply_config(new, "default", state)
    assert state is not None and state.queues["root.team"].draining
    _, outcome = submit(new, state, app_id="a2", user="alice", queue="root.team.dyn")
    assert outcome == Placed("root.team.dyn", "provided", False)
    _, outcome = submit(new, state, app_id="a3", user="bob", queue="root.team.dyn")
    assert isinstance(outcome, Rejected)


def test_partition_missing_from_the_new_file_is_forgotten() -> None:
    config = load(rules=PROVIDED_CREATE)
    state = _placed(config, None, queue="root.x")
    other = load(rules=PROVIDED_CREATE, partition="gpu")
    assert apply_config(other, "default", state) is None


def test_state_survives_a_dump_and_load_with_draining_queues() -> None:
    old = load(
        [{"name": "root", "queues": [{"name": "team", "parent": True, "submitacl": "alice dev"}]}], PROVIDED_CREATE
    )
    state = _placed(old, None, app_id="a1", user="alice", queue="root.team.dyn")
    state = apply_config(load(_queues(), PROVIDED_CREATE), "default", state)
    assert state is not None
    assert load_partition_state(dump_partition_state(state)) == state
