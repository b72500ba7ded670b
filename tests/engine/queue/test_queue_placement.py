"""Identity (spec F), the placement algorithm (G), ACLs (K), queue creation (L) and duplicates (B3)."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import load, submit, submit_once

from engine.queue.placement import Placed, Rejected, Submission, is_forced, resolve_applicant
from engine.queue.rules import Applicant
from engine.queue.state import PartitionState
from engine.queue.tree import QueueView, create_queues

FORCE = {"application.create.force": "true"}
_NO_MATCH = "failed to place application app-1: application rejected: no placement rule matched"


def _tree(*children: dict[str, Any], root_acl: str | None = None) -> list[dict[str, Any]]:
    root: dict[str, Any] = {"name": "root", "queues": list(children)}
    if root_acl is not None:
        root["submitacl"] = root_acl
    return [root]


# --- F: identity ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "groups", "tags", "expected"),
    [
        ("", (), {}, "empty user cannot resolve"),
        ("", ("dev",), {}, "empty user cannot resolve"),
        ("", (), FORCE, ("nobody", ("nogroup",))),
        ("", ("dev",), FORCE, ("nobody", ("nogroup",))),
        ("alice", (), {}, ("alice", ("alice",))),
        ("john doe", (), {}, ("john doe", ("john doe",))),
        ("alice", ("dev", "ops"), {}, ("alice", ("dev", "ops"))),
        ("john doe", ("dev",), {}, "invalid username, it contains invalid characters"),
        ("1alice", ("dev",), {}, "invalid username, it contains invalid characters"),
        ("svc$", ("dev",), {}, ("svc$", ("dev",))),
    ],
)
def test_identity_resolution(user: str, groups: tuple[str, ...], tags: dict[str, str], expected: Any) -> None:
    resolved = resolve_applicant(Submission("app-1", user, groups, "", tags))
    if isinstance(expected, str):
        assert resolved == expected
    else:
        assert isinstance(resolved, Applicant)
        assert (resolved.user, resolved.groups) == expected


def test_identity_rejections_are_results() -> None:
    outcome = submit_once(load(rules=[{"name": "provided"}]), user="")
    assert outcome == Rejected("empty user cannot resolve")
    outcome = submit_once(load(rules=[{"name": "provided"}]), user="a b", groups=("dev",))
    assert outcome == Rejected("invalid username, it contains invalid characters")


def test_forced_empty_user_uses_nobody_and_nogroup_for_acls() -> None:
    config = load(_tree({"name": "q", "submitacl": " nogroup"}), [{"name": "provided"}])
    assert submit_once(config, user="", queue="q", tags=FORCE) == Placed("root.q", "provided", False)


def test_missing_groups_mean_a_group_named_like_the_user() -> None:
    config = load(_tree({"name": "q", "submitacl": " dev"}), [{"name": "provided"}])
    assert submit_once(config, user="dev", queue="q") == Placed("root.q", "provided", False)
    assert isinstance(submit_once(config, user="dev", groups=("staff",), queue="q"), Rejected)


# --- G: algorithm -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "forced"),
    [({"application.create.force": value}, True) for value in ("1", "t", "T", "true", "TRUE", "True")]
    + [({"Application.Create.Force": "1"}, True), ({"APPLICATION.CREATE.FORCE": "T"}, True)]
    + [({"application.create.force": value}, False) for value in ("yes", "", "0", "false", "tRuE", "y", " true")]
    + [({}, False), ({"application.create": "true"}, False)],
)
def test_forced_application_tag(tags: dict[str, str], forced: bool) -> None:
    assert is_forced(tags) is forced


@pytest.mark.parametrize(
    ("queues", "rules", "fields", "expected"),
    [
        # G1 first passing rule wins, and reports its name
        (
            None,
            [{"name": "provided"}, {"name": "user", "create": True}],
            {"queue": "sandbox"},
            Placed("root.sandbox", "provided", False),
        ),
        (
            None,
            [{"name": "provided"}, {"name": "user", "create": True}],
            {"queue": "x"},
            Placed("root.alice", "user", False),
        ),
        (None, [{"name": "provided", "create": True}], {"queue": "newq"}, Placed("root.newq", "provided", True)),
        # G4 an existing parent is skipped by vetting
        (
            None,
            [{"name": "provided"}, {"name": "fixed", "value": "sandbox"}],
            {"queue": "dev"},
            Placed("root.sandbox", "fixed", False),
        ),
        # G5 fallback to root.default
        (None, [{"name": "provided"}], {"queue": ""}, Placed("root.default", "default", False)),
        (
            _tree({"name": "default", "submitacl": "alice"}),
            [{"name": "provided"}],
            {"user": "alice"},
            Placed("root.default", "default", False),
        ),
        (
            _tree({"name": "default", "submitacl": "alice"}),
            [{"name": "provided"}],
            {"user": "bob"},
            Rejected(_NO_MATCH),
        ),
        (_tree({"name": "default", "parent": True}, root_acl="*"), [{"name": "provided"}], {}, Rejected(_NO_MATCH)),
        (_tree({"name": "other"}, root_acl="*"), [{"name": "provided"}], {}, Rejected(_NO_MATCH)),
        # G8 forced applications
        (
            None,
            [{"name": "provided"}],
            {"queue": "missing", "tags": FORCE},
            Placed("root.@recovery@", "recovery", True),
        ),
        (None, [{"name": "provided"}], {"queue": "sandbox", "tags": FORCE}, Placed("root.sandbox", "provided", False)),
        (None, [{"name": "provided"}], {"queue": "", "tags": FORCE}, Placed("root.@recovery@", "recovery", True)),
        (
            _tree({"name": "default"}),
            [{"name": "provided"}],
            {"queue": "", "tags": FORCE},
            Placed("root.@recovery@", "recovery", True),
        ),
        (
            None,
            [{"name": "fixed", "value": "root.@recovery@", "create": True}],
            {"tags": FORCE},
            Placed("root.@recovery@", "fixed", True),
        ),
        # G9 non-forced never uses or creates the recovery queue
        (
            None,
            [{"name": "provided", "create": True}],
            {"queue": "root.@recovery@"},
            Placed("root.default", "default", False),
        ),
        (
            None,
            [{"name": "provided", "create": True}],
            {"queue": "ROOT.@Recovery@"},
            Placed("root.default", "default", False),
        ),
        (
            None,
            [{"name": "provided", "create": True}],
            {"queue": "@recovery@"},
            Placed("root.default", "default", False),
        ),
        (
            None,
            [{"name": "fixed", "value": "root.@recovery@", "create": True}],
            {},
            Placed("root.default", "default", False),
        ),
        # G10 / L4 creation failures reject without trying the next rule
        (
            None,
            [{"name": "provided", "create": True}, {"name": "fixed", "value": "sandbox"}],
            {"queue": "root.sandbox.sub"},
            Rejected(
                "failed to create rule based queue root.sandbox.sub for application app-1: "
                "creation of queue root.sandbox.sub failed parent is already a leaf: root.sandbox"
            ),
        ),
        (
            None,
            [{"name": "provided", "create": True}, {"name": "fixed", "value": "sandbox"}],
            {"queue": "root.x.@Recovery@"},
            Rejected(
                "failed to create rule based queue root.x.@recovery@ for application app-1: "
                "dynamic queue cannot be root.@recovery@"
            ),
        ),
    ],
)
def test_placement_algorithm(queues: Any, rules: list[dict[str, Any]], fields: dict[str, Any], expected: Any) -> None:
    assert submit_once(load(queues, rules), **fields) == expected


def test_creation_makes_intermediate_parents_and_a_leaf() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    state, outcome = submit(config, None, queue="root.a.b.c")
    assert outcome == Placed("root.a.b.c", "provided", True)
    assert state is not None
    assert {path: record.parent for path, record in state.queues.items()} == {
        "root.a": True,
        "root.a.b": True,
        "root.a.b.c": False,
    }
    assert state.applications["app-1"].queue == "root.a.b.c"


def test_no_depth_limit_only_level_length() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    deep = "root." + ".".join(f"l{index}" for index in range(40)) + "." + "x" * 64
    _, outcome = submit(config, None, queue=deep)
    assert outcome == Placed(deep, "provided", True)


def test_creation_rechecks_access_on_the_nearest_ancestor() -> None:
    config = load(_tree({"name": "team", "parent": True}), [{"name": "provided", "create": True}])
    partition = config.partitions["default"]
    view = QueueView(partition, PartitionState())
    applicant = Applicant(user="bob", groups=("bob",))
    assert (
        create_queues(view, "root.team.x", applicant)
        == "submit access to queue root.team denied during create of: root.team.x"
    )


# --- K: ACLs ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("queues", "user", "groups", "queue", "placed"),
    [
        (_tree({"name": "sandbox", "submitacl": "alice"}), "alice", (), "sandbox", True),
        (_tree({"name": "sandbox", "submitacl": "alice"}), "bob", (), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": " dev"}), "dev", ("staff",), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": " dev"}), "bob", ("staff", "dev"), "sandbox", True),
        (_tree({"name": "sandbox", "adminacl": "alice"}), "alice", (), "sandbox", True),
        (_tree({"name": "sandbox", "submitacl": "nobody *"}), "zed", (), "sandbox", True),
        (_tree({"name": "sandbox", "submitacl": "*"}), "zed", (), "sandbox", True),
        (_tree({"name": "sandbox", "submitacl": "* "}), "zed", (), "sandbox", True),
        (_tree({"name": "sandbox", "submitacl": "alice,*"}), "zed", (), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": "Alice"}), "alice", (), "sandbox", False),
        (
            _tree({"name": "sandbox", "submitacl": "system:serviceaccount:ns:sa"}),
            "system:serviceaccount:ns:sa",
            (),
            "sandbox",
            True,
        ),
        (_tree({"name": "sandbox", "submitacl": " team.a"}), "bob", ("team.a",), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": " "}), "bob", (), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": ""}), "bob", (), "sandbox", False),
        (_tree({"name": "sandbox"}), "bob", (), "sandbox", False),
        (_tree({"name": "sandbox", "submitacl": "x"}, root_acl="bob"), "bob", (), "sandbox", True),
        (
            _tree({"name": "p", "submitacl": "bob", "queues": [{"name": "c", "submitacl": "carol"}]}),
            "bob",
            (),
            "root.p.c",
            True,
        ),
        (
            _tree({"name": "p", "submitacl": "bob", "queues": [{"name": "c", "submitacl": "carol"}]}),
            "carol",
            (),
            "root.p.c",
            True,
        ),
        (
            _tree({"name": "p", "submitacl": "bob", "queues": [{"name": "c", "submitacl": "carol"}]}),
            "dan",
            (),
            "root.p.c",
            False,
        ),
        (_tree({"name": "p", "adminacl": "bob", "queues": [{"name": "c"}]}), "bob", (), "root.p.c", True),
    ],
)
def test_submit_access(queues: Any, user: str, groups: tuple[str, ...], queue: str, placed: bool) -> None:
    outcome = submit_once(load(queues, [{"name": "provided"}]), user=user, groups=groups, queue=queue)
    assert isinstance(outcome, Placed) is placed, outcome


def test_missing_queues_are_vetted_on_the_nearest_existing_ancestor() -> None:
    queues = _tree({"name": "open", "parent": True, "submitacl": "*"}, {"name": "closed", "parent": True})
    config = load(queues, [{"name": "provided", "create": True}])
    assert submit_once(config, queue="root.open.x.y") == Placed("root.open.x.y", "provided", True)
    assert submit_once(config, queue="root.closed.x") == Rejected(_NO_MATCH)


def test_dynamic_queues_have_no_acl_of_their_own() -> None:
    queues = _tree({"name": "team", "parent": True, "submitacl": "alice"})
    config = load(queues, [{"name": "provided", "create": True}])
    state, outcome = submit(config, None, app_id="a1", user="alice", queue="root.team.q")
    assert outcome == Placed("root.team.q", "provided", True)
    _, outcome = submit(config, state, app_id="a2", user="bob", queue="root.team.q")
    assert outcome == Rejected(_NO_MATCH.replace("app-1", "a2"))


def test_recovery_queue_never_passes_submit_access() -> None:
    config = load(_tree({"name": "x"}), [{"name": "provided", "create": True}])
    state, outcome = submit(config, None, app_id="forced", queue="nothing", tags=FORCE)
    assert outcome == Placed("root.@recovery@", "recovery", True)
    _, outcome = submit(config, state, app_id="again", queue="root.@recovery@", tags=FORCE)
    assert outcome == Placed("root.@recovery@", "provided", False)
    view = QueueView(config.partitions["default"], state or PartitionState())
    assert view.can_submit("root.@recovery@", Applicant(user="alice", groups=("alice",))) is False


# --- B3 and re-delivery --------------------------------------------------------------------------------------------


def test_active_application_id_is_rejected_unless_identical() -> None:
    config = load(rules=[{"name": "provided", "create": True}])
    state, first = submit(config, None, queue="newq")
    assert first == Placed("root.newq", "provided", True)
    again_state, again = submit(config, state, queue="newq")
    assert again == first
    assert again_state == state
    _, other = submit(config, state, queue="sandbox")
    assert other == Rejected("adding application app-1 to partition default, but application already existed")


def test_rejected_applications_are_not_remembered() -> None:
    config = load(rules=[{"name": "provided"}], queues=_tree({"name": "q"}))
    state, outcome = submit(config, None, queue="q")
    assert isinstance(outcome, Rejected)
    assert state is None


@pytest.mark.parametrize(
    ("first_groups", "second_groups", "second_queue"),
    [
        (("dev",), ("ops",), "root.sandbox"),  # upstream's 300 s group cache would still see `dev`
        (("dev",), (), "root.sandbox"),  # no groups: the user's own name is the only group
        (("ops",), ("dev",), "root.alice"),
    ],
)
def test_each_submission_is_judged_by_its_own_groups(
    first_groups: tuple[str, ...], second_groups: tuple[str, ...], second_queue: str
) -> None:
    rules = [
        {"name": "user", "create": True, "filter": {"groups": ["dev"]}},
        {"name": "fixed", "value": "root.sandbox"},
    ]
    config = load(rules=rules)
    state, _ = submit(config, None, app_id="app-1", user="alice", groups=first_groups)
    _, outcome = submit(config, state, app_id="app-2", user="alice", groups=second_groups)
    assert isinstance(outcome, Placed)
    assert outcome.queue == second_queue
