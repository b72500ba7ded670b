"""The examples of YuniKorn's "App Placement Rules" documentation, as the spec refines them."""

from __future__ import annotations

from typing import Any

import pytest
from queue_testkit import config_text, load, submit_once

from engine.errors import QueueConfigError
from engine.queue.config import load_queue_config
from engine.queue.placement import Placed, Rejected

OPEN_ROOT = [{"name": "root", "submitacl": "*", "queues": [{"name": "default"}]}]
FINANCE_QUEUES = [{"name": "root", "submitacl": "*", "queues": [{"name": "finance_dot_test"}, {"name": "default"}]}]
COMPLEX_RULES: list[dict[str, Any]] = [
    {
        "name": "user",
        "create": True,
        "filter": {"type": "allow", "groups": ["dev*"]},
        "parent": {"name": "tag", "value": "namespace"},
    },
    {
        "name": "tag",
        "value": "namespace",
        "create": True,
        "parent": {"name": "fixed", "value": "root.namespaces", "filter": {"type": "allow", "users": ["john"]}},
    },
    {"name": "fixed", "value": "root.default"},
]
COMPLEX_QUEUES = [
    {
        "name": "root",
        "submitacl": "*",
        "queues": [{"name": "default"}, {"name": "namespaces", "parent": True}, {"name": "newapp", "parent": True}],
    }
]


def _queue(queues: Any, rules: Any, **fields: Any) -> str:
    outcome = submit_once(load(queues, rules), **fields)
    assert isinstance(outcome, Placed), outcome
    return outcome.queue


@pytest.mark.parametrize(
    ("queues", "rules", "fields", "queue"),
    [
        # provided with a user parent
        (
            OPEN_ROOT,
            [{"name": "provided", "create": True, "parent": {"name": "user", "create": True}}],
            {"user": "developer", "queue": "my_special_queue"},
            "root.developer.my_special_queue",
        ),
        (
            OPEN_ROOT,
            [{"name": "provided", "create": True, "parent": {"name": "user", "create": True}}],
            {"user": "developer", "queue": "root.dev_queue"},
            "root.dev_queue",
        ),
        # user rule without create
        (FINANCE_QUEUES, [{"name": "user", "create": False}], {"user": "finance.test"}, "root.finance_dot_test"),
        (OPEN_ROOT, [{"name": "user", "create": False}], {"user": "developer"}, "root.default"),
        # fixed
        (
            [{"name": "root", "submitacl": "*", "queues": [{"name": "last_resort"}]}],
            [{"name": "fixed", "value": "last_resort"}],
            {"user": "developer", "queue": "my_special_queue"},
            "root.last_resort",
        ),
        # tag with the Kubernetes namespace
        (
            OPEN_ROOT,
            [{"name": "tag", "value": "namespace", "create": True}],
            {"tags": {"namespace": "default"}, "queue": "my_special_queue"},
            "root.default",
        ),
        (
            OPEN_ROOT,
            [{"name": "tag", "value": "namespace", "create": True}],
            {"tags": {"namespace": "testing"}},
            "root.testing",
        ),
        (OPEN_ROOT, [{"name": "tag", "value": "namespace", "create": True}], {}, "root.default"),
        # dot replacement
        (OPEN_ROOT, [{"name": "user", "create": True}], {"user": "user.name"}, "root.user_dot_name"),
        # complex example 1 (with `parent` as a mapping, see C7)
        (
            COMPLEX_QUEUES,
            COMPLEX_RULES,
            {"user": "john", "groups": ("john",), "tags": {"namespace": "testing"}},
            "root.namespaces.testing",
        ),
        (
            COMPLEX_QUEUES,
            COMPLEX_RULES,
            {"user": "sarah", "groups": ("sarah", "test_app", "dev_app"), "tags": {"namespace": "newapp"}},
            "root.newapp.sarah",
        ),
        (
            COMPLEX_QUEUES,
            COMPLEX_RULES,
            {"user": "bob", "groups": ("bob",), "tags": {"namespace": "testapp"}},
            "root.default",
        ),
        (
            COMPLEX_QUEUES,
            COMPLEX_RULES,
            {"user": "carol", "groups": ("code",), "tags": {"namespace": "newapp"}},
            "root.newapp.carol",
        ),
        # rule names are not case sensitive
        (OPEN_ROOT, [{"name": "User", "create": True}], {"user": "dev"}, "root.dev"),
    ],
)
def test_documented_placements(queues: Any, rules: Any, fields: dict[str, Any], queue: str) -> None:
    assert _queue(queues, rules, **fields) == queue


def test_documented_parent_list_form_is_a_config_error() -> None:
    text = config_text(COMPLEX_QUEUES, [{"name": "user", "parent": [{"name": "tag", "value": "namespace"}]}])
    with pytest.raises(QueueConfigError, match="parent must be a mapping"):
        load_queue_config(text, "q.yaml")


def test_production_example_follows_acl_inheritance() -> None:
    rules = [{"name": "fixed", "value": "root.production"}, {"name": "user", "create": True}]
    closed_root = [{"name": "root", "queues": [{"name": "production", "submitacl": "john,bob"}]}]
    assert _queue(closed_root, rules, user="john") == "root.production"
    # without a root ACL nobody else may create a queue below root (K7)
    assert isinstance(submit_once(load(closed_root, rules), user="alice"), Rejected)
    # with an open root the child ACL cannot narrow access (K6)
    open_root = [{"name": "root", "submitacl": "*", "queues": [{"name": "production", "submitacl": "john,bob"}]}]
    assert _queue(open_root, rules, user="alice") == "root.production"
    # opening access below root instead gives everyone else their own queue
    users_open = [
        {
            "name": "root",
            "queues": [
                {"name": "production", "submitacl": "john,bob"},
                {"name": "users", "parent": True, "submitacl": "*"},
            ],
        }
    ]
    user_rules = [rules[0], {"name": "user", "create": True, "parent": {"name": "fixed", "value": "root.users"}}]
    assert _queue(users_open, user_rules, user="alice") == "root.users.alice"
    assert _queue(users_open, user_rules, user="bob") == "root.production"


@pytest.mark.parametrize(
    "rules",
    [
        [{"name": "user", "create": "maybe"}],
        [{"name": "nosuchrule"}],
        [{"name": "user", "filter": {"users": ["user[a-z"]}}],
    ],
)
def test_documented_configuration_errors(rules: Any) -> None:
    with pytest.raises(QueueConfigError):
        load(OPEN_ROOT, rules)
