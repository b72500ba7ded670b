"""User and group limits of the queue configuration, checked as YuniKorn's validator checks them.

Placement does not enforce limits; they are checked so that a file YuniKorn refuses is refused here too, with
the same message. Three passes, in the validator's order: each queue's own limit list (names, duplicates,
wildcard last, at least one resource), then the maximum resources, then the maximum applications, each of the
last two inherited down the tree (a child may narrow a user's or group's limit, never widen it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.errors import QueueConfigError
from engine.queue.names import matches_filter_group, matches_filter_user
from engine.queue.quantity import Resource, fits_in, format_resource, parse_resource, pointwise_min, strictly_positive

__all__ = ["LimitSpec", "LimitedQueue", "check_inherited_limits", "check_limit_list"]

_WILDCARD = "*"
_ROOT = "root"


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One `limits` entry as written; None marks a key that was absent (so two lists compare as upstream does)."""

    limit: str = ""
    users: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None
    max_resources: Mapping[str, str] | None = None
    max_applications: int = 0

    def describe(self) -> str:
        """The entry as the validator prints it: `{<limit> [<users>] [<groups>] map[<resources>] <apps>}`."""
        resources = " ".join(f"{name}:{value}" for name, value in sorted((self.max_resources or {}).items()))
        users, groups = " ".join(self.users or ()), " ".join(self.groups or ())
        return f"{{{self.limit} [{users}] [{groups}] map[{resources}] {self.max_applications}}}"


class LimitedQueue(Protocol):
    """The parts of a configured queue the limit checks read."""

    @property
    def name(self) -> str: ...

    @property
    def max_resources(self) -> Mapping[str, str] | None: ...

    @property
    def max_applications(self) -> int: ...

    @property
    def limits(self) -> tuple[LimitSpec, ...]: ...

    @property
    def children(self) -> Sequence[LimitedQueue]: ...


def _check_name(seen: dict[str, bool], kind: str, valid: bool, duplicate: str, name: str) -> None:
    """Shared body of the user and group name checks of one limit entry."""
    if name != _WILDCARD and not valid:
        raise QueueConfigError(f"invalid limit {kind} name '{name}' in limit definition")
    if name in seen:
        raise QueueConfigError(duplicate)
    seen[name] = True
    if _WILDCARD in seen and name != _WILDCARD:
        raise QueueConfigError(f"should not set no wildcard {kind} {name} after wildcard {kind} limit")


def _check_limit(limit: LimitSpec, users: dict[str, bool], groups: dict[str, bool], queue: LimitedQueue) -> None:
    if not limit.users and not limit.groups:
        raise QueueConfigError(f"empty user and group lists defined in limit '{limit.describe()}'")
    for user in limit.users or ():
        duplicate = f"duplicated user name '{user}', already exists"
        _check_name(users, "user", matches_filter_user(user), duplicate, user)
    for group in limit.groups or ():
        duplicate = f"duplicated group name '{group}'"
        _check_name(groups, "group", matches_filter_group(group), duplicate, group)
    if _WILDCARD in groups and len(groups) == 1:
        raise QueueConfigError(
            "should not specify only one group limit that is using the wildcard. "
            "There must be at least one limit with a group name defined "
        )
    resource: Resource = {}
    if limit.max_resources:
        resource = parse_resource(limit.max_resources)
        if not strictly_positive(resource):
            raise QueueConfigError(f"MaxResources should be greater than zero in '{limit.limit}' limit")
    if limit.max_applications == 0 and not limit.max_resources:
        raise QueueConfigError(f"invalid resource combination for limit {limit.limit} all resource limits are null")
    if queue.max_applications != 0 and queue.max_applications < limit.max_applications:
        raise QueueConfigError(
            f"invalid MaxApplications settings for limit {limit.limit} exceed current the queue MaxApplications"
        )
    if queue.name != _ROOT:
        try:
            queue_max = parse_resource(queue.max_resources)
        except QueueConfigError as exc:
            raise QueueConfigError(f"parse queue {queue.name} max resource failed: {exc}") from exc
        if not fits_in(queue_max, resource):
            # "exeecd" is upstream's spelling, kept so the message is the one YuniKorn users search for
            raise QueueConfigError(
                f"invalid MaxResources settings for limit {limit.limit} exeecd current the queue MaxResources"
            )


def check_limit_list(queue: LimitedQueue) -> None:
    """One queue's own limit entries, in order; names are unique across the queue's whole list.

    Raises:
        QueueConfigError: the first entry that breaks a rule, with the validator's message.
    """
    users: dict[str, bool] = {}
    groups: dict[str, bool] = {}
    for limit in queue.limits:
        _check_limit(limit, users, groups, queue)


def _inherit_resources(
    queue: LimitedQueue, parent_users: Mapping[str, Resource], parent_groups: Mapping[str, Resource]
) -> None:
    own: dict[str, dict[str, Resource]] = {"user": dict(parent_users), "group": dict(parent_groups)}
    for limit in queue.limits:
        resource = parse_resource(limit.max_resources)
        for kind, names, inherited in (
            ("user", limit.users or (), parent_users),
            ("group", limit.groups or (), parent_groups),
        ):
            for name in names:
                if name in inherited:
                    if not fits_in(inherited[name], resource):
                        raise QueueConfigError(
                            f"{kind} {name} max resource {format_resource(resource)} of queue {queue.name} is greater "
                            f"than immediate or ancestor parent maximum resource {format_resource(inherited[name])}"
                        )
                    own[kind][name] = pointwise_min(resource, inherited[name]) or {}
                elif name != _WILDCARD and _WILDCARD in inherited:
                    if not fits_in(inherited[_WILDCARD], resource):
                        raise QueueConfigError(
                            f"{kind} {name} max resource {format_resource(resource)} of queue {queue.name} is greater "
                            f"than wildcard maximum resource {format_resource(inherited[_WILDCARD])} of immediate "
                            "or ancestor parent queue"
                        )
                    own[kind][name] = resource
                else:
                    own[kind][name] = resource
    for child in queue.children:
        _inherit_resources(child, own["user"], own["group"])


def _exceeds(parent: int, child: int) -> bool:
    """A child's application limit is wider than a set parent limit (zero means unlimited)."""
    return parent != 0 and (parent < child or child == 0)


def _inherit_applications(
    queue: LimitedQueue, parent_users: Mapping[str, int], parent_groups: Mapping[str, int]
) -> None:
    own: dict[str, dict[str, int]] = {"user": dict(parent_users), "group": dict(parent_groups)}
    for limit in queue.limits:
        count = limit.max_applications
        for kind, names, inherited in (
            ("user", limit.users or (), parent_users),
            ("group", limit.groups or (), parent_groups),
        ):
            for name in names:
                if name in inherited:
                    if _exceeds(inherited[name], count):
                        raise QueueConfigError(
                            f"{kind} {name} max applications {count} of queue {queue.name} is greater than "
                            f"immediate or ancestor parent max applications {inherited[name]}"
                        )
                elif name != _WILDCARD and _WILDCARD in inherited and _exceeds(inherited[_WILDCARD], count):
                    raise QueueConfigError(
                        f"{kind} {name} max applications {count} of queue {queue.name} is greater than wildcard "
                        f"max applications {inherited[_WILDCARD]} of immediate or ancestor parent queue"
                    )
                own[kind][name] = count
    for child in queue.children:
        _inherit_applications(child, own["user"], own["group"])


def check_inherited_limits(root: LimitedQueue) -> None:
    """The resource, then the application limits of every user and group against those of the ancestors.

    Raises:
        QueueConfigError: a queue widens a limit set above it, or a limit's resource does not parse.
    """
    _inherit_resources(root, {}, {})
    _inherit_applications(root, {}, {})
