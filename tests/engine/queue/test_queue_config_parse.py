"""Configuration parsing (spec A1, A3, A7, C)."""

from __future__ import annotations

import hashlib

import pytest
from queue_testkit import config_error, config_text, load

from engine.queue.config import load_queue_config
from engine.queue.rules import FixedRule

_TRUE_WORDS = ["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"]
_FALSE_WORDS = ["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"]


def _rules_yaml(rule_lines: str) -> str:
    return (
        "partitions:\n"
        "  - name: default\n"
        "    queues:\n"
        "      - name: root\n"
        "        submitacl: '*'\n"
        "        queues:\n"
        "          - name: sandbox\n"
        "    placementrules:\n" + rule_lines
    )


# --- C: parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_rules_yaml("      - name: user\n        Create: true\n"), "unknown key Create in placement rule (line 10)"),
        ("partitions:\n  - name: default\n    queues: []\nextra: 1\n", "unknown key extra in configuration (line 4)"),
        ("partitions:\n  - name: default\n    queue: []\n", "unknown key queue in partition (line 3)"),
        (
            "partitions:\n  - name: default\n    queues:\n      - name: root\n        acl: x\n",
            "unknown key acl in queue (line 5)",
        ),
        (
            _rules_yaml("      - name: user\n        filter:\n          user: [a]\n"),
            "unknown key user in filter (line 11)",
        ),
        (
            "partitions:\n  - name: default\n    queues: []\n    limits:\n      - limit: x\n        maxapps: 1\n",
            "unknown key maxapps in limit (line 6)",
        ),
    ],
)
def test_unknown_keys_are_named_with_their_line(text: str, message: str) -> None:
    assert config_error(text) == message


def test_every_known_key_is_accepted() -> None:
    text = """checksum: abc
partitions:
  - name: default
    limits:
      - limit: all
        users: [alice]
        groups: [dev]
        maxresources: {memory: 10G}
        maxapplications: 5
    preemption:
      enabled: true
      quotapreemptionenabled: false
    nodesortpolicy:
      type: binpacking
      resourceweights: {vcore: 1.0}
    usergroupresolver:
      type: ""
    placementrules:
      - name: fixed
        value: leaf
        create: false
        filter: {type: allow, users: [alice], groups: [dev]}
    queues:
      - name: root
        submitacl: '*'
        adminacl: admin
        maxapplications: 10
        properties: {application.sort.policy: fifo}
        childtemplate:
          maxapplications: 2
          properties: {a: b}
          resources: {max: {vcore: 1}}
        limits:
          - limit: all
            users: [alice]
            groups: [dev]
            maxresources: {memory: 10G}
            maxapplications: 5
        queues:
          - name: leaf
            parent: false
            maxapplications: 5
            resources: {guaranteed: {memory: 1G}, max: {memory: 2G}}
"""
    config = load_queue_config(text, "queues.yaml")
    assert set(config.partitions) == {"default"}
    assert "root.leaf" in config.partitions["default"].queues


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("partitions:\n  - name: default\n    queues: []\n    limits: 5\n", "limits must be a list (line 4)"),
        (
            "partitions:\n  - name: default\n    queues:\n      - name: root\n        maxapplications: many\n",
            "maxapplications must be a non-negative integer (line 5)",
        ),
        (
            "partitions:\n  - name: default\n    queues:\n      - name: root\n        resources: [1]\n",
            "resources must be a mapping (line 5)",
        ),
        ("partitions:\n  - name: default\n    queues: {name: root}\n", "queues must be a list (line 3)"),
        ("partitions:\n  - name: [a]\n    queues: []\n", "name must be a string (line 2)"),
        ("partitions: 3\n", "partitions must be a list (line 1)"),
    ],
)
def test_values_are_type_checked(text: str, message: str) -> None:
    assert config_error(text) == message


@pytest.mark.parametrize("text", ["partitions:\n  - name: [\n", "partitions:\n\t- x\n", "a: b\na: c\n"])
def test_broken_yaml_is_a_config_error(text: str) -> None:
    assert config_error(text)


@pytest.mark.parametrize("queues", [None, "absent"])
def test_partition_without_queues_is_not_set(queues: str | None) -> None:
    body = "partitions:\n  - name: default\n" + ("    queues:\n" if queues is None else "    placementrules: []\n")
    assert config_error(body) == "queue config is not set"


@pytest.mark.parametrize(("word", "expected"), [(w, True) for w in _TRUE_WORDS] + [(w, False) for w in _FALSE_WORDS])
def test_plain_yaml11_booleans_are_accepted(word: str, expected: bool) -> None:
    config = load_queue_config(_rules_yaml(f"      - name: user\n        create: {word}\n"), "q.yaml")
    assert config.partitions["default"].rules[0].options.create is expected


@pytest.mark.parametrize("word", ["", "~", "null"])
def test_empty_or_null_boolean_is_false(word: str) -> None:
    config = load_queue_config(_rules_yaml(f"      - name: user\n        create: {word}\n"), "q.yaml")
    assert config.partitions["default"].rules[0].options.create is False


@pytest.mark.parametrize("word", ['"yes"', "'true'", "maybe", "1", "0", "[true]"])
def test_other_boolean_spellings_are_config_errors(word: str) -> None:
    assert (
        config_error(_rules_yaml(f"      - name: user\n        create: {word}\n"))
        == "create must be a boolean (line 10)"
    )


def test_queue_parent_flag_is_a_strict_boolean() -> None:
    text = "partitions:\n  - name: default\n    queues:\n      - name: a\n        parent: 'yes'\n"
    assert config_error(text) == "parent must be a boolean (line 5)"
    config = load_queue_config(text.replace("'yes'", "Yes"), "q.yaml")
    assert config.partitions["default"].queues["root.a"].parent is True


@pytest.mark.parametrize(
    ("value", "queue"), [("yes", "root.yes"), ("on", "root.on"), ("010", "root.010"), ("1.10", "root.1.10")]
)
def test_string_fields_keep_their_literal_text(value: str, queue: str) -> None:
    text = _rules_yaml(f"      - name: fixed\n        value: {value}\n        create: true\n")
    rule = load_queue_config(text, "q.yaml").partitions["default"].rules[0]
    assert isinstance(rule, FixedRule)
    assert rule.queue == queue.removeprefix("root.")


def test_queue_names_and_acls_keep_their_literal_text() -> None:
    text = "partitions:\n  - name: default\n    queues:\n      - name: yes\n        submitacl: on\n"
    queue = load_queue_config(text, "q.yaml").partitions["default"].queues["root.yes"]
    assert queue.submit_acl.users == frozenset({"on"})


def test_parent_rule_must_be_a_single_mapping() -> None:
    text = _rules_yaml("      - name: user\n        parent:\n          - name: fixed\n            value: root.x\n")
    assert config_error(text) == "parent must be a mapping (line 11)"


def test_empty_filter_lists_count_as_absent() -> None:
    config = load(rules=[{"name": "user", "filter": {"type": "deny", "users": [], "groups": []}}])
    rule_filter = config.partitions["default"].rules[0].options.filter
    assert rule_filter.users.empty and rule_filter.groups.empty
    assert rule_filter.admits("anyone", ["any"]) is False


# --- A7: partitions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"), [("", "default"), ("DEFAULT", "default"), ("Default", "default"), ("gpu", "gpu")]
)
def test_partition_names_are_normalised(name: str, canonical: str) -> None:
    config = load_queue_config(config_text(partition=name), "q.yaml")
    assert set(config.partitions) == {canonical}
    assert config.partition(name.upper()) is config.partitions[canonical]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["", "default"], "duplicate partition name found with name default"),
        (["gpu", "GPU"], "duplicate partition name found with name GPU"),
    ],
)
def test_duplicate_partition_names(names: list[str], message: str) -> None:
    text = "partitions:\n" + "".join(f"  - name: '{name}'\n    queues: []\n" for name in names)
    assert config_error(text) == message


@pytest.mark.parametrize("text", ["", "checksum: x\n", "partitions: []\n", "partitions:\n"])
def test_a_file_without_partitions_is_an_error(text: str) -> None:
    assert config_error(text) == "no partitions defined"


def test_config_keeps_path_and_content_digest() -> None:
    text = config_text()
    config = load_queue_config(text, "/etc/q.yaml")
    assert config.path == "/etc/q.yaml"
    assert config.sha256 == hashlib.sha256(text.encode()).hexdigest()
