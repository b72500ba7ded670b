"""Configuration checks that run before anything is built, on the parsed queue and rule specs: queue names,
ACL syntax, each queue's limit list, rule names and filters, and the static paths of fixed rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.errors import QueueConfigError
from engine.queue.acl import check_acl_syntax
from engine.queue.filters import check_filter
from engine.queue.limits import LimitSpec, check_limit_list
from engine.queue.names import INVALID_QUEUE_NAME, ROOT, is_fully_qualified, is_valid_queue_level, is_valid_rule_name
from engine.queue.rules.base import RuleSpec

__all__ = ["QueueSpec", "check_queues", "check_rule", "check_static_paths", "with_root"]

_FIXED = "fixed"


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """One queue as written in the file; None marks an absent resource map (upstream tells it from `{}`)."""

    name: str
    parent: bool = False
    children: tuple[QueueSpec, ...] = ()
    submit_acl: str = ""
    admin_acl: str = ""
    guaranteed: Mapping[str, str] | None = None
    max_resources: Mapping[str, str] | None = None
    max_applications: int = 0
    limits: tuple[LimitSpec, ...] = ()
    template_max_applications: int = 0
    template_properties: Mapping[str, str] | None = None
    template_guaranteed: Mapping[str, str] | None = None
    template_max: Mapping[str, str] | None = None

    @property
    def is_parent(self) -> bool:
        """Children or `parent: true` make a parent."""
        return self.parent or bool(self.children)

    def child(self, name: str) -> QueueSpec | None:
        """A child by name compared case-insensitively."""
        lowered = name.lower()
        return next((child for child in self.children if child.name.lower() == lowered), None)


def with_root(top_level: Sequence[QueueSpec]) -> QueueSpec:
    """A single top-level `root` (any case) is the root, keeping its settings; anything else goes below an
    inserted root without any. Root is always a parent."""
    if len(top_level) == 1 and top_level[0].name.lower() == ROOT:
        return replace(top_level[0], parent=True)
    return QueueSpec(ROOT, True, tuple(top_level))


def check_queues(queue: QueueSpec, level: int = 1) -> None:
    """ACLs (admin first), the queue's limit list, then its children's names; depth first after each level.

    Raises:
        QueueConfigError: a malformed ACL, a broken limit, or invalid or duplicate child names.
    """
    check_acl_syntax(queue.admin_acl)
    check_acl_syntax(queue.submit_acl)
    check_limit_list(queue)
    seen: set[str] = set()
    for child in queue.children:
        if not is_valid_queue_level(child.name):
            raise QueueConfigError(INVALID_QUEUE_NAME)
        if child.name.lower() in seen:
            raise QueueConfigError(f"duplicate child name found with name '{child.name}', level {level}")
        seen.add(child.name.lower())
    for child in queue.children:
        check_queues(child, level + 1)


def check_rule(rule: RuleSpec) -> None:
    """The name and filter of a rule and its parents, innermost parent first.

    Raises:
        QueueConfigError: an invalid rule name or filter.
    """
    if rule.parent is not None:
        check_rule(rule.parent)
    if not is_valid_rule_name(rule.name):
        raise QueueConfigError(f"invalid rule name {rule.name}, a name must be a valid identifier")
    check_filter(rule.filter_type, rule.filter_users, rule.filter_groups)


def _chain(rule: RuleSpec) -> list[RuleSpec]:
    chain: list[RuleSpec] = []
    current: RuleSpec | None = rule
    while current is not None:
        chain.append(current)
        current = current.parent
    chain.reverse()
    return chain


def _static_path(chain: Sequence[RuleSpec]) -> tuple[str, bool] | None:
    """The lower-case path of the leading fixed rules and whether a dynamic part follows."""
    if not chain or chain[0].name.lower() != _FIXED:
        return None
    path = ""
    dynamic = False
    for position, rule in enumerate(chain):
        if rule.name.lower() != _FIXED:
            dynamic = True
            break
        value = rule.value.lower()
        if position == 0:
            path = value if is_fully_qualified(value) else f"{ROOT}.{value}"
        elif is_fully_qualified(value):
            raise QueueConfigError(f"illegal fully qualified 'fixed' rule with value {rule.value}")
        else:
            path = f"{path}.{value}"
    return path, dynamic


def check_static_paths(rules: Sequence[RuleSpec], root: QueueSpec) -> None:
    """A chain starting with fixed rules must reference queues that exist or can be created.

    Raises:
        QueueConfigError: the static path is unusable for the rule.
    """
    for index, rule in enumerate(rules):
        chain = _chain(rule)
        found = _static_path(chain)
        if found is None:
            continue
        path, dynamic = found
        names = "->".join(item.name for item in chain)
        prefix = f"placement rule no. #{index} ({names})"
        current = root
        missing = False
        for level in path.split(".")[1:]:
            if not current.is_parent:
                raise QueueConfigError(
                    f"{prefix} references non-existing queues ({path}) which cannot be created because the last "
                    f"queue ({current.name.lower()}) in the hierarchy is a leaf"
                )
            child = current.child(level)
            if child is None:
                missing = True
                break
            current = child
        if missing:
            if not rule.create:
                raise QueueConfigError(f"{prefix} references non-existing queues ({path}) and create is 'false'")
            continue
        if current.is_parent != dynamic:
            raise QueueConfigError(f"{prefix} references a queue ({path}) which is not a leaf")
