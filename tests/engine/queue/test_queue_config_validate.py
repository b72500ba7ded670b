"""Configuration validation (spec D) and rule-set building (E)."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import config_error, config_error_of, load

from engine.queue.rules import FixedRule, ProvidedRule, RecoveryRule, TagRule, UserRule

# --- D1-D4: queues ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        ([{"name": "a"}, {"name": "b"}], {"root", "root.a", "root.b"}),
        ([{"name": "root"}, {"name": "x"}], {"root", "root.root", "root.x"}),
        ([], {"root"}),
    ],
)
def test_root_is_inserted_unless_given_alone(queues: list[dict[str, Any]], expected: set[str]) -> None:
    partition = load(queues).partitions["default"]
    assert set(partition.queues) == expected
    assert partition.queues["root"].parent is True


@pytest.mark.parametrize("name", ["ROOT", "Root"])
def test_a_root_written_in_another_case_cannot_be_created(name: str) -> None:
    """The validator takes it as the root (nothing is inserted), but only a queue named `root` can be created."""
    queues = [{"name": name, "queues": [{"name": "a"}]}]
    assert config_error_of(queues) == "partition cannot be created without root queue"


_NAME_ERROR = (
    "invalid queue name, max 64 characters consisting of alphanumeric characters and "
    "'-', '_', '#', '@', '/', ':' allowed"
)


@pytest.mark.parametrize("name", ["dev.team", "a b", "x" * 65, "", "a!", "é"])
def test_invalid_queue_names(name: str) -> None:
    assert config_error_of([{"name": "root", "queues": [{"name": name}]}]) == _NAME_ERROR


@pytest.mark.parametrize("name", ["a", "x" * 64, "A-b_c:d#e/f@g", "0"])
def test_valid_queue_names(name: str) -> None:
    assert f"root.{name.lower()}" in load([{"name": name}]).partitions["default"].queues


@pytest.mark.parametrize(
    ("queues", "message"),
    [
        ([{"name": "a"}, {"name": "A"}], "duplicate child name found with name 'A', level 1"),
        (
            [{"name": "p", "queues": [{"name": "x"}, {"name": "x"}]}],
            "duplicate child name found with name 'x', level 2",
        ),
    ],
)
def test_duplicate_sibling_names(queues: list[dict[str, Any]], message: str) -> None:
    assert config_error_of(queues) == message


@pytest.mark.parametrize(
    ("acl", "message"),
    [
        ("a b c", "multiple spaces found in ACL: 'a b c'"),
        ("a  b", "multiple spaces found in ACL: 'a  b'"),
        (" a b ", "multiple spaces found in ACL: ' a b '"),
    ],
)
@pytest.mark.parametrize("key", ["submitacl", "adminacl"])
def test_acl_with_too_many_parts(acl: str, message: str, key: str) -> None:
    assert config_error_of([{"name": "q", key: acl}]) == message


@pytest.mark.parametrize("acl", ["", " ", "*", "* ", "alice", "alice,bob dev", " dev", "nobody *"])
def test_acceptable_acls(acl: str) -> None:
    assert load([{"name": "q", "submitacl": acl}]).partitions["default"].queues["root.q"].submit_acl.raw == acl


# --- D5-D8: rule names and filters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"name": "1user"}], "invalid rule name 1user, a name must be a valid identifier"),
        ([{"name": "user", "parent": {"name": "ta-g"}}], "invalid rule name ta-g, a name must be a valid identifier"),
        ([{"name": ""}], "invalid rule name , a name must be a valid identifier"),
        (
            [{"name": "user", "filter": {"type": "maybe"}}],
            "invalid rule filter type maybe, filter type  must be either '', allow or deny",
        ),
        (
            [{"name": "user", "filter": {"users": ["*"]}}],
            "invalid rule filter user list is not a proper list or regexp: [*]",
        ),
        (
            [{"name": "user", "filter": {"users": ["user[a-z"]}}],
            "invalid rule filter user list is not a proper list or regexp: [user[a-z]",
        ),
        (
            [{"name": "user", "filter": {"users": ["user!1"]}}],
            "invalid rule filter user list is not a proper list or regexp: [user!1]",
        ),
        (
            [{"name": "user", "filter": {"users": [""]}}],
            "invalid rule filter user list is not a proper list or regexp: []",
        ),
        (
            [{"name": "user", "filter": {"users": ["a b"]}}],
            "invalid rule filter user list is not a proper list or regexp: [a b]",
        ),
        (
            [{"name": "user", "filter": {"users": ["(?=a)b+"]}}],
            "invalid rule filter user list is not a proper list or regexp: [(?=a)b+]",
        ),
        (
            [{"name": "user", "filter": {"groups": ["dev@x"]}}],
            "invalid rule filter group list is not a proper list or regexp: [dev@x]",
        ),
        (
            [{"name": "user", "parent": {"name": "tag", "value": "x", "filter": {"groups": ["*"]}}}],
            "invalid rule filter group list is not a proper list or regexp: [*]",
        ),
    ],
)
def test_rule_validation_errors(rules: list[dict[str, Any]], message: str) -> None:
    assert config_error_of(rules=rules) == message


@pytest.mark.parametrize(
    "rule_filter",
    [
        {"type": "ALLOW", "users": ["alice"]},
        {"type": "Deny", "groups": ["dev"]},
        {"type": "", "users": ["ops$"]},
        {"users": ["^dev.*$"]},
        {"users": ["bob*", "x"]},
        {"users": ["a b", "!!"]},
        {"groups": ["dev*"]},
        {"users": ["system:serviceaccount:ns:sa"]},
    ],
)
def test_acceptable_filters(rule_filter: dict[str, Any]) -> None:
    assert load(rules=[{"name": "user", "filter": rule_filter}]).partitions["default"].rules[0].NAME == "user"


# --- D9-D12: static paths of fixed chains -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (
            [{"name": "fixed", "value": "root.sandbox.sub", "create": True}],
            "placement rule no. #0 (fixed) references non-existing queues (root.sandbox.sub) which cannot be "
            "created because the last queue (sandbox) in the hierarchy is a leaf",
        ),
        (
            [{"name": "provided"}, {"name": "fixed", "value": "missing"}],
            "placement rule no. #1 (fixed) references non-existing queues (root.missing) and create is 'false'",
        ),
        (
            [{"name": "FIXED", "value": "root.missing"}],
            "placement rule no. #0 (FIXED) references non-existing queues (root.missing) and create is 'false'",
        ),
        (
            [{"name": "user", "parent": {"name": "fixed", "value": "root.missing", "create": True}}],
            "placement rule no. #0 (fixed->user) references non-existing queues (root.missing) and create is 'false'",
        ),
        (
            [{"name": "fixed", "value": "root.dev"}],
            "placement rule no. #0 (fixed) references a queue (root.dev) which is not a leaf",
        ),
        (
            [{"name": "fixed", "value": "users"}],
            "placement rule no. #0 (fixed) references a queue (root.users) which is not a leaf",
        ),
        (
            [{"name": "fixed", "value": "root"}],
            "placement rule no. #0 (fixed) references a queue (root) which is not a leaf",
        ),
        (
            [{"name": "user", "create": True, "parent": {"name": "fixed", "value": "root.sandbox"}}],
            "placement rule no. #0 (fixed->user) references a queue (root.sandbox) which is not a leaf",
        ),
        (
            [
                {
                    "name": "user",
                    "parent": {"name": "fixed", "value": "Sandbox", "parent": {"name": "Fixed", "value": "dev"}},
                }
            ],
            "placement rule no. #0 (Fixed->fixed->user) references non-existing queues (root.dev.sandbox) "
            "and create is 'false'",
        ),
        (
            [
                {
                    "name": "user",
                    "parent": {"name": "fixed", "value": "root.users", "parent": {"name": "fixed", "value": "dev"}},
                }
            ],
            "illegal fully qualified 'fixed' rule with value root.users",
        ),
    ],
)
def test_static_path_errors(rules: list[dict[str, Any]], message: str) -> None:
    assert config_error_of(rules=rules) == message


@pytest.mark.parametrize(
    ("queues", "rules"),
    [
        (None, [{"name": "fixed", "value": "root.newq", "create": True}]),
        (None, [{"name": "user", "parent": {"name": "fixed", "value": "ROOT.Users"}}]),
        (None, [{"name": "user", "parent": {"name": "fixed", "value": "dev"}}]),
        (None, [{"name": "user", "parent": {"name": "fixed", "value": "root"}}]),
        (None, [{"name": "tag", "value": "ns", "parent": {"name": "fixed", "value": "root.users"}}]),
        (None, [{"name": "user", "create": True, "parent": {"name": "fixed", "value": "teams.a", "create": False}}]),
        ([{"name": "SandBox"}], [{"name": "fixed", "value": "root.sandbox"}]),
        ([{"name": "Users", "parent": True}], [{"name": "user", "parent": {"name": "fixed", "value": "users"}}]),
        (
            None,
            [
                {
                    "name": "provided",
                    "create": True,
                    "parent": {"name": "user", "parent": {"name": "fixed", "value": "missing"}},
                }
            ],
        ),
    ],
)
def test_static_paths_that_validate(queues: Any, rules: list[dict[str, Any]]) -> None:
    assert len(load(queues, rules).partitions["default"].rules) == len(rules) + 1


# --- E: rule sets ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", [None, []])
def test_no_rules_means_provided_then_recovery(rules: Any) -> None:
    built = load(rules=rules).partitions["default"].rules
    assert [type(rule) for rule in built] == [ProvidedRule, RecoveryRule]
    assert built[0].options.create is False


def test_recovery_is_appended_and_names_are_case_insensitive() -> None:
    built = (
        load(
            rules=[
                {"name": "USER", "create": True},
                {"name": "Provided"},
                {"name": "Tag", "value": "NameSpace"},
                {"name": "fixed", "value": "Sandbox"},
            ]
        )
        .partitions["default"]
        .rules
    )
    assert [type(rule) for rule in built] == [UserRule, ProvidedRule, TagRule, FixedRule, RecoveryRule]
    assert isinstance(built[2], TagRule) and built[2].tag_name == "namespace"
    assert isinstance(built[3], FixedRule) and built[3].queue == "sandbox"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"name": "recovery"}], "recovery rule cannot be part of the config, failing placement rule config"),
        ([{"name": "Recovery"}], "recovery rule cannot be part of the config, failing placement rule config"),
        ([{"name": "test"}], "unknown rule name specified test, failing placement rule config"),
        ([{"name": "group"}], "unknown rule name specified group, failing placement rule config"),
        ([{"name": "fixed", "create": True}], "a fixed queue rule must have a queue name set"),
        ([{"name": "tag"}], "a tag queue rule must have a tag name set"),
        ([{"name": "fixed", "value": "a..b", "create": True}], _NAME_ERROR),
        ([{"name": "fixed", "value": "a b", "create": True}], _NAME_ERROR),
        (
            [{"name": "fixed", "value": "root.sandbox", "parent": {"name": "user"}}],
            "cannot have a fixed queue rule with qualified queue name and a parent rule",
        ),
        (
            [{"name": "user", "parent": {"name": "tag", "parent": {"name": "provided"}}}],
            "a tag queue rule must have a tag name set",
        ),
        (
            [{"name": "user", "parent": {"name": "provided", "parent": {"name": "nope"}}}],
            "unknown rule name specified nope, failing placement rule config",
        ),
    ],
)
def test_rule_build_errors(rules: list[dict[str, Any]], message: str) -> None:
    assert config_error_of(rules=rules) == message


def test_user_and_provided_ignore_value() -> None:
    built = load(rules=[{"name": "user", "value": "x"}, {"name": "provided", "value": "y"}]).partitions["default"].rules
    assert [rule.NAME for rule in built] == ["user", "provided", "recovery"]


def test_any_failing_partition_fails_the_whole_file() -> None:
    text = (
        "partitions:\n  - name: first\n    queues: []\n"
        "  - name: second\n    queues: []\n    placementrules:\n      - name: bogus\n"
    )
    assert config_error(text) == "unknown rule name specified bogus, failing placement rule config"


def test_effective_rules_are_described() -> None:
    partition = load(
        rules=[{"name": "user", "create": True, "parent": {"name": "fixed", "value": "root.users"}}]
    ).partitions["default"]
    text = partition.describe_rules()
    assert "#0 user(create=true" in text
    assert "parent=fixed(root.users" in text
    assert "#1 recovery(" in text
