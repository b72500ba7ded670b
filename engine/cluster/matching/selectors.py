"""Kubernetes label selectors: validation with the selector library's error texts, and matching.

A compiled selector is a hashable tuple of requirements, so results can be cached per inventory version
and shared by every placement that uses the same selector (spec C8–C10).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.errors import EngineError
from topics.k8s import LabelSelector, LabelSelectorRequirement

__all__ = ["EVERYTHING", "Requirement", "Selector", "SelectorError", "compile_selector", "matches"]

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME_FMT}$")
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS_RE = re.compile(f"^{_DNS_FMT}$")
_DNS_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


class SelectorError(EngineError, ValueError):
    """A selector that the Kubernetes library rejects; the text is the library's."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement: `op` is `in`, `notin`, `exists` or `!` (does not exist)."""

    key: str
    op: str
    values: frozenset[str]


Selector = tuple[Requirement, ...]
"""A compiled selector; the empty tuple matches everything."""

EVERYTHING: Selector = ()


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{fmt}')"


def _key_errors(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253:
            return ["prefix part must be no more than 253 characters"]
        if not _DNS_RE.match(prefix):
            return ["prefix part " + _regex_error(_DNS_MSG, _DNS_FMT, "example.com")]
    else:
        return [
            "a qualified name "
            + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        return ["name part must be non-empty"]
    errors = []
    if len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _NAME_RE.match(name):
        errors.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errors


def _value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if value and not _NAME_RE.match(value):
        errors.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _go_strings(values: Sequence[str] | None) -> str:
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _requirement(key: str, operator: str, values: Sequence[str] | None) -> Requirement:
    """Validate like the library's NewRequirement: key, value count, then each value."""
    errors: list[str] = []
    key_errors = _key_errors(key)
    if key_errors:
        errors.append(f'key: Invalid value: "{key}": ' + "; ".join(key_errors))
    count = len(values or ())
    if operator in ("in", "notin") and count == 0:
        errors.append(
            f"values: Invalid value: {_go_strings(values)}: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in ("exists", "!") and count != 0:
        errors.append(
            f"values: Invalid value: {_go_strings(values)}: values set must be empty for exists and does not exist"
        )
    for index, value in enumerate(values or ()):
        value_errors = _value_errors(value)
        if value_errors:
            errors.append(f'values[{index}][{key}]: Invalid value: "{value}": ' + "; ".join(value_errors))
    if len(errors) == 1:
        raise SelectorError(errors[0])
    if errors:
        raise SelectorError("[" + ", ".join(errors) + "]")
    return Requirement(key, operator, frozenset(values or ()))


def compile_selector(
    match_labels: Mapping[str, str] | None, match_expressions: Sequence[LabelSelectorRequirement] | None
) -> Selector:
    """Build a selector as LabelSelectorAsSelector does; raises SelectorError with the library's text."""
    requirements: list[Requirement] = []
    for key, value in sorted((match_labels or {}).items()):
        requirements.append(_requirement(key, "in", [value]))
    for expression in match_expressions or ():
        op = _OPERATORS.get(expression.operator)
        if op is None:
            raise SelectorError(f'"{expression.operator}" is not a valid label selector operator')
        requirements.append(_requirement(expression.key, op, expression.values))
    return tuple(sorted(set(requirements), key=lambda r: (r.key, r.op, sorted(r.values))))


def compile_label_selector(selector: LabelSelector | None) -> Selector:
    """A value-type selector field: absent is empty, which matches everything."""
    if selector is None:
        return EVERYTHING
    return compile_selector(selector.match_labels, selector.match_expressions)


def matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    """Kubernetes matching: every requirement holds."""
    for req in selector:
        op = req.op
        if op == "in":
            if labels.get(req.key) not in req.values or req.key not in labels:
                return False
        elif op == "notin":
            if req.key in labels and labels[req.key] in req.values:
                return False
        elif op == "exists":
            if req.key not in labels:
                return False
        elif req.key in labels:
            return False
    return True


__all__ += ["compile_label_selector"]
