"""Strict reading of the queue configuration YAML (spec C).

The text is composed into nodes with pyyaml's BaseLoader, so no implicit YAML 1.1 typing happens: every
scalar keeps its literal text (C6), booleans are recognised only as plain scalars (C5), and every mapping
key is checked against the known keys with its line number (C1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from engine.errors import QueueConfigError

__all__ = ["SCHEMA", "read_config_document"]

_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _is_plain_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.style is None and node.value in _NULL


class Shape:
    """How one value in the file must look."""

    def read(self, key: str, node: yaml.Node) -> Any:
        """The plain Python value of `node`, found under `key`."""
        raise NotImplementedError


class Text(Shape):
    """A string field: the literal scalar text; null is empty."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return ""
        if not isinstance(node, yaml.ScalarNode):
            raise QueueConfigError(f"{key} must be a string (line {_line(node)})")
        return str(node.value)


class Flag(Shape):
    """A boolean field: plain YAML 1.1 boolean words only (C5)."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return False
        if isinstance(node, yaml.ScalarNode) and node.style is None:
            if node.value in _TRUE:
                return True
            if node.value in _FALSE:
                return False
        raise QueueConfigError(f"{key} must be a boolean (line {_line(node)})")


class Count(Shape):
    """A non-negative integer field (`maxapplications`), checked for type only."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return 0
        if isinstance(node, yaml.ScalarNode) and node.style is None and node.value.isdigit():
            return int(node.value)
        raise QueueConfigError(f"{key} must be a non-negative integer (line {_line(node)})")


class Scalar(Shape):
    """Any single value (map values of resources and properties)."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise QueueConfigError(f"{key} must be a single value (line {_line(node)})")
        return str(node.value)


@dataclass
class ListOf(Shape):
    """A sequence; null stays None so callers can tell `queues: null` from `queues: []`."""

    item: Shape

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return None
        if not isinstance(node, yaml.SequenceNode):
            raise QueueConfigError(f"{key} must be a list (line {_line(node)})")
        return [self.item.read(key, child) for child in node.value]


@dataclass
class DictOf(Shape):
    """A mapping with free-form keys (resource names, properties)."""

    value: Shape

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise QueueConfigError(f"{key} must be a mapping (line {_line(node)})")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else ""
            if name in result:
                raise QueueConfigError(f"duplicate key {name} (line {_line(key_node)})")
            result[name] = self.value.read(f"{key}.{name}", value_node)
        return result


@dataclass
class Struct(Shape):
    """A mapping with known, case-sensitive keys; anything else is an unknown key (C1)."""

    what: str
    fields: dict[str, Shape] = field(default_factory=dict)

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return None
        if not isinstance(node, yaml.MappingNode):
            raise QueueConfigError(f"{key} must be a mapping (line {_line(node)})")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "<complex key>"
            shape = self.fields.get(name)
            if shape is None:
                raise QueueConfigError(f"unknown key {name} in {self.what} (line {_line(key_node)})")
            if name in result:
                raise QueueConfigError(f"duplicate key {name} in {self.what} (line {_line(key_node)})")
            result[name] = shape.read(name, value_node)
        return result


def _build_schema() -> Struct:
    text, flag, count, scalar = Text(), Flag(), Count(), Scalar()
    resources = Struct("resources", {"guaranteed": DictOf(scalar), "max": DictOf(scalar)})
    limit = Struct(
        "limit",
        {
            "limit": text,
            "users": ListOf(text),
            "groups": ListOf(text),
            "maxresources": DictOf(scalar),
            "maxapplications": count,
        },
    )
    child_template = Struct(
        "childtemplate", {"maxapplications": count, "properties": DictOf(scalar), "resources": resources}
    )
    queue = Struct("queue")
    queue.fields.update(
        {
            "name": text,
            "parent": flag,
            "queues": ListOf(queue),
            "submitacl": text,
            "adminacl": text,
            "resources": resources,
            "maxapplications": count,
            "properties": DictOf(scalar),
            "childtemplate": child_template,
            "limits": ListOf(limit),
        }
    )
    rule_filter = Struct("filter", {"type": text, "users": ListOf(text), "groups": ListOf(text)})
    rule = Struct("placement rule")
    rule.fields.update({"name": text, "create": flag, "filter": rule_filter, "parent": rule, "value": text})
    partition = Struct(
        "partition",
        {
            "name": text,
            "queues": ListOf(queue),
            "placementrules": ListOf(rule),
            "limits": ListOf(limit),
            "preemption": Struct("preemption", {"enabled": flag}),
            "nodesortpolicy": Struct("nodesortpolicy", {"type": text, "resourceweights": DictOf(scalar)}),
            "usergroupresolver": Struct("usergroupresolver", {"type": text, "args": DictOf(scalar)}),
        },
    )
    return Struct("configuration", {"partitions": ListOf(partition), "checksum": text})


SCHEMA = _build_schema()
"""The whole file: `partitions` and `checksum` at the top (C2)."""


def read_config_document(text: str) -> Mapping[str, Any]:
    """Parse the file into plain dicts, lists, strings and booleans.

    Raises:
        QueueConfigError: invalid YAML, a type mismatch or an unknown key.
    """
    try:
        root = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise QueueConfigError(f"invalid YAML: {exc.problem or exc.context}{where}") from exc
    except yaml.YAMLError as exc:
        raise QueueConfigError(f"invalid YAML: {exc}") from exc
    if root is None:
        return {}
    document = SCHEMA.read("configuration", root)
    return document if isinstance(document, dict) else {}
