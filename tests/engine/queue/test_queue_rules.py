"""Rule behaviour (spec H), queue names (I) and filters (J), through whole placements on a fresh partition."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import load, submit_once

from engine.queue.filters import build_filter
from engine.queue.names import is_fully_qualified, replace_dots
from engine.queue.placement import Placed, Rejected

_NAME_ERROR = (
    "invalid queue name, max 64 characters consisting of alphanumeric characters and "
    "'-', '_', '#', '@', '/', ':' allowed"
)
_NO_MATCH = "failed to place application app-1: application rejected: no placement rule matched"


def _outcome(rules: list[dict[str, Any]], queues: Any = None, **fields: Any) -> Placed | Rejected:
    return submit_once(load(queues, rules), **fields)


def _queue_of(rules: list[dict[str, Any]], queues: Any = None, **fields: Any) -> str:
    outcome = _outcome(rules, queues, **fields)
    assert isinstance(outcome, Placed), outcome
    return outcome.queue


def _reason_of(rules: list[dict[str, Any]], queues: Any = None, **fields: Any) -> str:
    outcome = _outcome(rules, queues, **fields)
    assert isinstance(outcome, Rejected), outcome
    return outcome.reason


PROVIDED = {"name": "provided", "create": True}
SANDBOX = {"name": "fixed", "value": "root.sandbox"}


@pytest.mark.parametrize(
    ("rules", "fields", "queue"),
    [
        # H1-H3 provided
        ([PROVIDED], {"queue": "newq"}, "root.newq"),
        ([PROVIDED], {"queue": "a.b"}, "root.a_dot_b"),
        ([PROVIDED], {"queue": "ROOT.Sandbox"}, "root.sandbox"),
        ([PROVIDED], {"queue": "root.users.new"}, "root.users.new"),
        ([{"name": "provided"}], {"queue": "SandBox"}, "root.sandbox"),
        ([{"name": "provided"}], {"queue": "finance.test"}, "root.finance_dot_test"),
        ([{"name": "provided"}, SANDBOX], {"queue": ""}, "root.sandbox"),
        (
            [{"name": "provided", "create": True, "parent": {"name": "user", "create": True}}],
            {"queue": "mine", "user": "dev"},
            "root.dev.mine",
        ),
        (
            [{"name": "provided", "create": True, "parent": {"name": "user", "create": True}}],
            {"queue": "root.x", "user": "dev"},
            "root.x",
        ),
        (
            [{"name": "provided", "create": True, "parent": {"name": "fixed", "value": "root"}}],
            {"queue": "top"},
            "root.top",
        ),
        ([{"name": "provided"}], {"queue": "root"}, "root.default"),
        # H4 user
        ([{"name": "user", "create": True}], {"user": "Alice"}, "root.alice"),
        ([{"name": "user"}], {"user": "finance.test"}, "root.finance_dot_test"),
        ([{"name": "user", "create": True}], {"user": "root.x"}, "root.root_dot_x"),
        ([{"name": "user", "create": True}], {"user": "test.user@gmail.com"}, "root.test_dot_user@gmail_dot_com"),
        ([{"name": "user"}, SANDBOX], {"user": "nobodyhere"}, "root.sandbox"),
        # H5 fixed
        ([{"name": "fixed", "value": "dev.alice"}], {}, "root.dev.alice"),
        ([{"name": "fixed", "value": "rootless", "create": True}], {}, "root.rootless"),
        ([{"name": "fixed", "value": "Root.NewQ", "create": True}], {}, "root.newq"),
        ([{"name": "fixed", "value": "team.q", "create": True}], {}, "root.team.q"),
        ([{"name": "fixed", "value": "alice", "parent": {"name": "fixed", "value": "dev"}}], {}, "root.dev.alice"),
        # H6 tag
        ([{"name": "tag", "value": "namespace", "create": True}], {"tags": {"namespace": "default"}}, "root.default"),
        ([{"name": "tag", "value": "NameSpace", "create": True}], {"tags": {"NAMESPACE": "Finance"}}, "root.finance"),
        ([{"name": "tag", "value": "ns", "create": True}], {"tags": {"ns": "team.a"}}, "root.team_dot_a"),
        (
            [{"name": "tag", "value": "ns", "create": True, "parent": {"name": "fixed", "value": "namespaces"}}],
            {"tags": {"ns": "Root.Users.team2"}},
            "root.users.team2",
        ),
        ([{"name": "tag", "value": "ns", "create": True}, SANDBOX], {"tags": {"ns": ""}}, "root.sandbox"),
        ([{"name": "tag", "value": "ns", "create": True}, SANDBOX], {"tags": {}}, "root.sandbox"),
        (
            [
                {
                    "name": "tag",
                    "value": "namespace",
                    "create": True,
                    "parent": {"name": "tag", "value": "namespace.parentqueue"},
                }
            ],
            {"tags": {"namespace": "ns1", "namespace.parentqueue": "root.namespaces"}},
            "root.namespaces.ns1",
        ),
        # H8 create false / existing parent skipped
        ([{"name": "tag", "value": "ns"}], {"tags": {"ns": "nothere"}}, "root.default"),
        ([{"name": "tag", "value": "ns"}, SANDBOX], {"tags": {"ns": "users"}}, "root.sandbox"),
        # H9-H11 parents
        (
            [
                {
                    "name": "user",
                    "create": True,
                    "parent": {
                        "name": "tag",
                        "value": "ns",
                        "create": True,
                        "parent": {"name": "fixed", "value": "root.namespaces"},
                    },
                }
            ],
            {"tags": {"ns": "ml"}},
            "root.namespaces.ml.alice",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "tag", "value": "dept"}}],
            {"tags": {"dept": "users"}},
            "root.users.alice",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "tag", "value": "dept"}}, SANDBOX],
            {"tags": {"dept": "nope"}},
            "root.sandbox",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "tag", "value": "dept"}}, SANDBOX],
            {"tags": {}},
            "root.sandbox",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "fixed", "value": "root.teams", "create": True}}],
            {},
            "root.teams.alice",
        ),
        ([{"name": "user", "create": True, "parent": {"name": "provided"}}], {"queue": "root"}, "root.alice"),
        # H12 recovery only for forced applications
        ([{"name": "provided"}], {"queue": "missing", "tags": {"application.create.force": "true"}}, "root.@recovery@"),
    ],
)
def test_rule_places(rules: list[dict[str, Any]], fields: dict[str, Any], queue: str) -> None:
    assert _queue_of(rules, **fields) == queue


@pytest.mark.parametrize(
    ("rules", "fields", "reason"),
    [
        ([PROVIDED], {"queue": "root.users."}, f"failed to place application app-1: {_NAME_ERROR}: ''"),
        ([PROVIDED], {"queue": "root..a"}, f"failed to place application app-1: {_NAME_ERROR}: ''"),
        ([PROVIDED], {"queue": "root."}, f"failed to place application app-1: {_NAME_ERROR}: ''"),
        ([PROVIDED, SANDBOX], {"queue": "a b"}, f"failed to place application app-1: {_NAME_ERROR}: 'a b'"),
        ([PROVIDED], {"queue": "q" * 65}, f"failed to place application app-1: {_NAME_ERROR}: '{'q' * 65}'"),
        (
            [PROVIDED],
            {"queue": "q" * 30 + "." + "r" * 30},
            f"failed to place application app-1: {_NAME_ERROR}: '{'q' * 30}_dot_{'r' * 30}'",
        ),
        (
            [{"name": "user", "create": True}, SANDBOX],
            {"user": "john doe"},
            f"failed to place application app-1: {_NAME_ERROR}: 'john doe'",
        ),
        (
            [{"name": "tag", "value": "ns", "create": True}, SANDBOX],
            {"tags": {"ns": "bad name"}},
            f"failed to place application app-1: {_NAME_ERROR}: 'bad name'",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "provided"}}, SANDBOX],
            {"queue": "sandbox"},
            "failed to place application app-1: parent rule returned a leaf queue: root.sandbox",
        ),
        (
            [
                {
                    "name": "user",
                    "create": True,
                    "parent": {"name": "tag", "value": "p", "parent": {"name": "provided"}},
                },
                SANDBOX,
            ],
            {"queue": "root.dev", "tags": {"p": "bad name"}},
            f"failed to place application app-1: {_NAME_ERROR}: 'bad name'",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "provided"}}],
            {"queue": "a b", "tags": {"application.create.force": "true"}},
            f"failed to place application app-1: {_NAME_ERROR}: 'a b'",
        ),
    ],
)
def test_rule_errors_reject_at_once(rules: list[dict[str, Any]], fields: dict[str, Any], reason: str) -> None:
    assert _reason_of(rules, **fields) == reason


def test_user_name_is_checked_before_the_parent_rule() -> None:
    rules = [{"name": "user", "create": True, "parent": {"name": "provided"}}]
    reason = _reason_of(rules, user="bad user", queue="sandbox")
    assert reason.endswith("'bad user'")


def test_no_match_anywhere_is_rejected_with_the_normative_text() -> None:
    queues = [{"name": "root", "submitacl": "*", "queues": [{"name": "sandbox"}]}]
    assert _reason_of([{"name": "provided"}], queues, queue="missing") == _NO_MATCH


# --- I: names ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "qualified"),
    [
        ("root", True),
        ("ROOT", True),
        ("Root.x", True),
        ("root.", True),
        ("rootless", False),
        ("x.root", False),
        ("", False),
    ],
)
def test_fully_qualified_names(name: str, qualified: bool) -> None:
    assert is_fully_qualified(name) is qualified


@pytest.mark.parametrize(("name", "replaced"), [("a.b.c", "a_dot_b_dot_c"), ("plain", "plain"), (".", "_dot_")])
def test_dot_replacement(name: str, replaced: str) -> None:
    assert replace_dots(name) == replaced


def test_dot_replacement_never_applies_to_fixed_values() -> None:
    assert _queue_of([{"name": "fixed", "value": "finance.test", "create": True}]) == "root.finance.test"


# --- J: filters ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filter_type", "users", "groups", "user", "user_groups", "admitted"),
    [
        ("", [], [], "anyone", ["g"], True),  # J7 empty allow
        ("deny", [], [], "anyone", ["g"], False),  # J7 empty deny
        ("DENY", ["bob"], [], "bob", [], False),  # J1 case-insensitive type
        ("Deny", [], ["ops"], "carol", ["ops"], False),
        ("ALLOW", ["carol"], [], "dave", [], False),
        ("allow", ["alice", "bob"], [], "bob", [], True),  # J4 list
        ("allow", ["Alice", "Bob"], [], "alice", [], False),  # J6 case-sensitive
        ("allow", ["ops$"], [], "ops$", [], True),  # J3 literal with trailing $
        ("allow", ["ops$"], [], "ops", [], False),
        ("allow", ["dev.team"], [], "devxteam", [], False),  # J3 dot is not a regexp character
        ("allow", ["dev.team"], [], "dev.team", [], True),
        ("allow", ["dev*"], [], "xde", [], True),  # J5 unanchored search
        ("allow", ["user[0-1]"], [], "superuser1", [], True),
        ("allow", ["^user[0-1]$"], [], "superuser1", [], False),
        ("allow", ["(?i)^ALICE$"], [], "alice", [], True),
        ("allow", ["bob*", "eve"], [], "bobby", [], False),  # J4 regexps in lists are dropped
        ("allow", ["bob*", "eve"], [], "eve", [], True),
        ("allow", ["bob", "bob"], [], "bob", [], True),  # duplicates collapse
        ("allow", ["bob*", "1bad"], [], "bob", [], False),  # every entry dropped: a filter matching nobody
        ("allow", ["bob*", "1bad"], [], "bobby", ["g"], False),
        ("deny", ["bob*", "1bad"], [], "bob", [], True),
        ("deny", [], ["a@b", "1g"], "carol", ["a@b"], True),
        ("allow", [], ["a@b", "1g"], "carol", ["a@b"], False),
        ("allow", ["alice"], ["dev"], "eve", ["ops"], False),  # J8 neither matches
        ("allow", ["alice"], ["dev"], "eve", ["ops", "dev"], True),  # any group in order
        ("deny", ["alice"], ["dev"], "eve", ["ops"], True),
        ("allow", [], ["dev*"], "carol", ["code"], True),  # group regexp one group at a time
        ("allow", [], ["^dev"], "carol", ["x", "devs"], True),
        ("allow", [], ["^dev$"], "dev", ["devs"], False),
    ],
)
def test_filter_evaluation(
    filter_type: str, users: list[str], groups: list[str], user: str, user_groups: list[str], admitted: bool
) -> None:
    assert build_filter(filter_type, users, groups).admits(user, user_groups) is admitted


@pytest.mark.parametrize(
    ("rule_filter", "user", "groups", "queue"),
    [
        ({"users": ["Alice", "Bob"]}, "alice", (), "root.sandbox"),
        ({"type": "allow", "users": ["alice"], "groups": ["dev"]}, "eve", ("ops",), "root.sandbox"),
        ({"type": "deny"}, "alice", (), "root.sandbox"),
        ({"type": "Deny", "groups": ["ops"]}, "carol", ("ops",), "root.sandbox"),
        ({"type": "ALLOW", "users": ["carol"]}, "dave", (), "root.sandbox"),
        ({"type": "allow", "users": ["carol"]}, "carol", (), "root.carol"),
        ({"type": "deny", "users": ["carol"]}, "dave", (), "root.dave"),
    ],
)
def test_filters_on_rules(rule_filter: dict[str, Any], user: str, groups: tuple[str, ...], queue: str) -> None:
    rules = [{"name": "user", "create": True, "filter": rule_filter}, SANDBOX]
    assert _queue_of(rules, user=user, groups=groups) == queue


def test_filter_on_a_nested_parent_rule_applies_to_the_parent() -> None:
    rules = [
        {
            "name": "user",
            "create": True,
            "parent": {"name": "fixed", "value": "root.users", "filter": {"users": ["john"]}},
        },
        SANDBOX,
    ]
    assert _queue_of(rules, user="john") == "root.users.john"
    assert _queue_of(rules, user="mary") == "root.sandbox"


def test_provided_checks_empty_request_before_filter_and_tag_before_filter() -> None:
    deny_all = {"type": "deny"}
    rules = [{"name": "provided", "create": True, "filter": deny_all}, SANDBOX]
    assert _queue_of(rules, queue="q") == "root.sandbox"
    rules = [{"name": "tag", "value": "ns", "create": True, "filter": {"users": ["alice"]}}, SANDBOX]
    assert _queue_of(rules, tags={"ns": "x"}) == "root.x"
    assert _queue_of(rules, user="bob", tags={"ns": "x"}) == "root.sandbox"
