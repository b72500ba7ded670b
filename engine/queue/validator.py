"""The whole-partition validation YuniKorn runs before a configuration is accepted, in its order.

Per partition: the queue structure (a root, and no resources on it), partition limits against root limits,
queue names, ACLs and limit lists, queue resources down the tree, placement rules, the node sort policy,
maximum applications down the tree, and user and group limits down the tree. The first broken rule is the
error, with upstream's message. Settings placement does not use are checked too, so that a file YuniKorn
refuses is refused here and one it accepts is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from engine.errors import QueueConfigError
from engine.queue.limits import LimitSpec, check_inherited_limits
from engine.queue.quantity import Resource, fits_in, format_resource, is_zero, parse_resource, pointwise_min, total
from engine.queue.rules.base import RuleSpec
from engine.queue.validate import QueueSpec, check_queues, check_rule, check_static_paths, with_root

__all__ = ["check_child_template", "validate_partition"]

_NODE_SORT_POLICIES = frozenset(("", "fair", "binpacking"))


def _strings(raw: Any) -> tuple[str, ...]:
    return tuple(raw) if isinstance(raw, list) else ()


def _rule_spec(raw: Mapping[str, Any] | None) -> RuleSpec:
    raw = raw or {}
    filter_raw: Mapping[str, Any] = raw.get("filter") or {}
    parent = raw.get("parent")
    return RuleSpec(
        name=raw.get("name", ""),
        create=raw.get("create", False),
        value=raw.get("value", ""),
        filter_type=filter_raw.get("type", ""),
        filter_users=_strings(filter_raw.get("users")),
        filter_groups=_strings(filter_raw.get("groups")),
        parent=None if parent is None else _rule_spec(parent),
    )


def _limit_specs(raw: Any) -> tuple[LimitSpec, ...]:
    limits: list[LimitSpec] = []
    for entry in raw or ():
        item: Mapping[str, Any] = entry or {}
        users, groups = item.get("users"), item.get("groups")
        limits.append(
            LimitSpec(
                limit=item.get("limit", ""),
                users=None if users is None else tuple(users),
                groups=None if groups is None else tuple(groups),
                max_resources=item.get("maxresources"),
                max_applications=item.get("maxapplications", 0),
            )
        )
    return tuple(limits)


def _queue_spec(raw: Mapping[str, Any] | None) -> QueueSpec:
    raw = raw or {}
    resources: Mapping[str, Any] = raw.get("resources") or {}
    template: Mapping[str, Any] = raw.get("childtemplate") or {}
    template_resources: Mapping[str, Any] = template.get("resources") or {}
    return QueueSpec(
        name=raw.get("name", ""),
        parent=raw.get("parent", False),
        children=tuple(_queue_spec(child) for child in raw.get("queues") or ()),
        submit_acl=raw.get("submitacl", ""),
        admin_acl=raw.get("adminacl", ""),
        guaranteed=resources.get("guaranteed"),
        max_resources=resources.get("max"),
        max_applications=raw.get("maxapplications", 0),
        limits=_limit_specs(raw.get("limits")),
        template_max_applications=template.get("maxapplications", 0),
        template_properties=template.get("properties"),
        template_guaranteed=template_resources.get("guaranteed"),
        template_max=template_resources.get("max"),
    )


def _check_resources(queue: QueueSpec, parent_max: Resource | None) -> Resource:
    """A queue's guaranteed and max against each other, its parent's max and its children's guarantees.

    Returns the queue's guaranteed resource, or its children's total when it sets none.
    """
    guaranteed = parse_resource(queue.guaranteed)
    maximum = parse_resource(queue.max_resources)
    if not fits_in(maximum, guaranteed):
        raise QueueConfigError(
            f"guaranteed resource {format_resource(guaranteed)} is larger than maximum resource "
            f"{format_resource(maximum)} for queue {queue.name}"
        )
    if not fits_in(parent_max, maximum):
        raise QueueConfigError(
            f"max resource of parent {format_resource(parent_max)} is smaller than maximum resource "
            f"{format_resource(maximum)} for queue {queue.name}"
        )
    effective_max = pointwise_min(maximum, parent_max) or {}
    children = total([_check_resources(child, effective_max) for child in queue.children])
    if not fits_in(guaranteed, children):
        raise QueueConfigError(
            f"guaranteed resource of parent {format_resource(guaranteed)} is smaller than sum of guaranteed "
            f"resources {format_resource(children)} of the children for queue {queue.name}"
        )
    if not fits_in(effective_max, children):
        raise QueueConfigError(
            f"max resource {format_resource(effective_max)} is smaller than sum of guaranteed resources "
            f"{format_resource(children)} of the children for queue {queue.name}"
        )
    return children if is_zero(guaranteed) else guaranteed


def _check_max_applications(queue: QueueSpec) -> None:
    """A parent's application limit bounds each child's, and then every child needs one of its own."""
    for child in queue.children:
        if queue.max_applications != 0 and queue.max_applications < child.max_applications:
            raise QueueConfigError("parent maxApplications must be larger than child maxApplications")
        if queue.max_applications != 0 and child.max_applications == 0:
            raise QueueConfigError(
                "maxApplications is either undefined or zero, which is not allowed when parent queue's "
                "maxApplications is defined"
            )
        _check_max_applications(child)


def _check_node_sort_policy(raw: Mapping[str, Any] | None) -> None:
    """The policy name is case-sensitive (empty means fair); resource weights must not be negative."""
    policy = raw or {}
    kind = policy.get("type", "")
    if kind not in _NODE_SORT_POLICIES:
        raise QueueConfigError(f"undefined policy: {kind}")
    for name, weight in (policy.get("resourceweights") or {}).items():
        if weight < 0 and not math.isnan(weight):
            raise QueueConfigError(f"negative resource weight for {name} is not allowed")


def validate_partition(raw: Mapping[str, Any]) -> tuple[QueueSpec, list[RuleSpec]]:
    """Check one partition as YuniKorn's validator does; returns its queue tree (with root) and rule specs.

    Raises:
        QueueConfigError: the first broken rule, with upstream's message where it has one.
    """
    if raw.get("queues") is None:
        raise QueueConfigError("queue config is not set")
    root = with_root([_queue_spec(item) for item in raw["queues"]])
    if root.guaranteed is not None or root.max_resources is not None:
        raise QueueConfigError("root queue must not have resource limits set")
    partition_limits = _limit_specs(raw.get("limits"))
    if partition_limits and root.limits and partition_limits != root.limits:
        raise QueueConfigError("partition limits and root queue limits are not equivalent")
    if partition_limits and not root.limits:
        root = replace(root, limits=partition_limits)
    check_queues(root)
    _check_resources(root, None)
    rules = [_rule_spec(item) for item in raw.get("placementrules") or ()]
    for spec in rules:
        check_rule(spec)
    check_static_paths(rules, root)
    _check_node_sort_policy(raw.get("nodesortpolicy"))
    _check_max_applications(root)
    check_inherited_limits(root)
    return root, rules


def _template_is_empty(queue: QueueSpec) -> bool:
    """No template setting that counts: map entries with an empty key or value do not."""
    maps = (queue.template_properties, queue.template_guaranteed, queue.template_max)
    return queue.template_max_applications == 0 and not any(
        key and value for entries in maps for key, value in (entries or {}).items()
    )


def check_child_template(queue: QueueSpec) -> None:
    """A parent queue's child template must hold valid quantities; upstream reads it when it creates the queue.

    Raises:
        QueueConfigError: `configured queue creation failed: <quantity error>`.
    """
    if queue.is_parent and not _template_is_empty(queue):
        try:
            parse_resource(queue.template_max)
            parse_resource(queue.template_guaranteed)
        except QueueConfigError as exc:
            raise QueueConfigError(f"configured queue creation failed: {exc}") from exc
