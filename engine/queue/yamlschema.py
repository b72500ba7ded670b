"""Strict reading of the queue configuration YAML, as YuniKorn's decoder with known fields only.

The text is composed into nodes with pyyaml's BaseLoader, so no implicit YAML 1.1 typing happens: every
scalar keeps its literal text, booleans are recognised only as plain scalars, and every mapping
key is checked against the known keys with its line number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from engine.errors import QueueConfigError

__all__ = ["SCHEMA", "read_config_document"]

_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_UINT64_MAX = (1 << 64) - 1
_INT_BASES = (("0x", 16), ("0o", 8), ("0b", 2))
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_FLOATS = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}


def _integer(text: str) -> int | None:
    """An integer literal as Go reads one with base prefixes: `0x1F`, `0o17`, `0b101`, `017` (octal), `-5`."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    base = 10
    for prefix, prefix_base in _INT_BASES:
        if body[:2].lower() == prefix:
            body, base = body[2:], prefix_base
            break
    else:
        if len(body) > 1 and body[0] == "0":
            body, base = body[1:], 8
    if not body or not body.isascii() or not body.isalnum():
        return None
    try:
        return sign * int(body, base)
    except ValueError:
        return None


def _plain_number(text: str) -> int | float | None:
    """What a YAML decoder resolves a plain scalar to when it is a number: underscores are dropped, integers
    (decimal, hex, octal, binary) are tried before floats, and `.inf`/`.nan` are floats."""
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if not text or text[0] not in "+-.0123456789":
        return None
    plain = text.replace("_", "")
    integer = _integer(plain)
    if integer is not None and -(1 << 63) <= integer <= _UINT64_MAX:
        return integer
    if not _FLOAT.fullmatch(plain):
        return None
    number = float(plain)
    return None if number in (float("inf"), float("-inf")) else number  # out of range: not a number


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
    """A boolean field: plain YAML 1.1 boolean words only."""

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
    """A non-negative integer field (`maxapplications`): a plain YAML number that fits an unsigned 64-bit value
    (a float is truncated, as a YAML decoder into an unsigned integer does)."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return 0
        if isinstance(node, yaml.ScalarNode) and node.style is None:
            value = _plain_number(node.value)
            if isinstance(value, int) and 0 <= value <= _UINT64_MAX:
                return value
            if isinstance(value, float) and 0 <= value <= float(_UINT64_MAX):  # NaN compares false
                return min(int(value), _UINT64_MAX)
        raise QueueConfigError(f"{key} must be a non-negative integer (line {_line(node)})")


class Number(Shape):
    """A floating-point field (node sort resource weights): a plain YAML number, as a float decoder reads it."""

    def read(self, key: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode) and node.style is None:
            value = _plain_number(node.value)
            if value is not None:
                return float(value)
        raise QueueConfigError(f"{key} must be a number (line {_line(node)})")


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
    """A mapping with free-form keys (resource names, properties); null stays None, as an absent map."""

    value: Shape

    def read(self, key: str, node: yaml.Node) -> Any:
        if _is_plain_null(node):
            return None
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
    """A mapping with known, case-sensitive keys; anything else is an unknown key."""

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
    text, flag, count, scalar, number = Text(), Flag(), Count(), Scalar(), Number()
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
            "preemption": Struct("preemption", {"enabled": flag, "quotapreemptionenabled": flag}),
            "nodesortpolicy": Struct("nodesortpolicy", {"type": text, "resourceweights": DictOf(number)}),
            "usergroupresolver": Struct("usergroupresolver", {"type": text}),
        },
    )
    return Struct("configuration", {"partitions": ListOf(partition), "checksum": text})


SCHEMA = _build_schema()
"""The whole file: `partitions` and `checksum` at the top."""


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
