"""What every placement rule shares: the applicant, the queue lookup, results and parent handling (spec H)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from engine.queue.filters import ALLOW_EVERYONE, RuleFilter
from engine.queue.names import INVALID_QUEUE_NAME, ROOT, is_valid_queue_level, replace_dots

__all__ = [
    "Applicant",
    "PlacementRule",
    "QueueLookup",
    "RuleError",
    "RuleOptions",
    "RuleResult",
    "RuleSpec",
    "check_level",
    "describe_rule",
    "finish",
    "invalid_name_error",
    "place_below_parent",
    "place_one_level",
]


@dataclass(frozen=True, slots=True)
class Applicant:
    """A submission after identity resolution (spec F): what rules and ACLs look at."""

    user: str
    groups: tuple[str, ...]
    queue: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    forced: bool = False

    def tag(self, name: str) -> str:
        """A tag value by key compared case-insensitively (first such key wins); empty when absent."""
        wanted = name.lower()
        return next((value for key, value in self.tags.items() if key.lower() == wanted), "")


@dataclass(frozen=True, slots=True)
class RuleError:
    """A rule error: placement stops and the application is rejected (spec G2, G3)."""

    message: str


RuleResult = str | RuleError | None
"""A lower-case fully qualified queue name, a rule error, or None for no match."""


class QueueLookup(Protocol):
    """The read side of a partition's queue tree that rules need."""

    def exists(self, path: str) -> bool:
        """Whether the (lower-case) queue path exists, configured or dynamic."""
        ...

    def is_leaf(self, path: str) -> bool:
        """Whether an existing queue is a leaf."""
        ...


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """One rule as written in the file, after parsing (spec C2)."""

    name: str
    create: bool = False
    value: str = ""
    filter_type: str = ""
    filter_users: tuple[str, ...] = ()
    filter_groups: tuple[str, ...] = ()
    parent: RuleSpec | None = None


@dataclass(frozen=True, slots=True)
class RuleOptions:
    """The parameters all rules accept."""

    create: bool = False
    filter: RuleFilter = ALLOW_EVERYONE
    parent: PlacementRule | None = None


class PlacementRule(Protocol):
    """A built rule. `place` never raises: no match and rule errors are results."""

    NAME: ClassVar[str]

    @property
    def options(self) -> RuleOptions:
        """Create flag, filter and parent rule."""
        ...

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """The queue this rule selects for the applicant."""
        ...

    def describe(self) -> str:
        """The rule with its parameters, for the rule-set log line (spec O2)."""
        ...


def invalid_name_error(name: str) -> RuleError:
    """The rule error for a generated queue name that is not a valid queue level (G3)."""
    return RuleError(f"{INVALID_QUEUE_NAME}: '{name}'")


def place_below_parent(options: RuleOptions, level: str, app: Applicant, queues: QueueLookup) -> RuleResult:
    """Spec H8-H11: put `level` (one or more dotted levels) below the parent rule's result, or below root.

    The parent runs as a full rule without vetting; its no match is the child's no match.
    """
    if options.parent is None:
        return finish(options, f"{ROOT}.{level}", queues)
    base = options.parent.place(app, queues)
    if base is None or isinstance(base, RuleError):
        return base
    if base != ROOT and queues.exists(base) and queues.is_leaf(base):
        return RuleError(f"parent rule returned a leaf queue: {base}")
    return finish(options, f"{base}.{level}", queues)


def place_one_level(options: RuleOptions, name: str, app: Applicant, queues: QueueLookup) -> RuleResult:
    """Spec I2, I3, H8: a generated name becomes one level (dots replaced, then checked) below the parent."""
    level = replace_dots(name)
    if (error := check_level(level)) is not None:
        return error
    return place_below_parent(options, level, app, queues)


def finish(options: RuleOptions, name: str, queues: QueueLookup) -> RuleResult:
    """Spec I4 and H8: lower-case the result; a missing queue without create is no match."""
    lowered = name.lower()
    if not options.create and not queues.exists(lowered):
        return None
    return lowered


def check_level(name: str) -> RuleError | None:
    """A rule error when one generated level is invalid (I3)."""
    return None if is_valid_queue_level(name) else invalid_name_error(name)


def describe_rule(name: str, options: RuleOptions, value: str = "") -> str:
    """`name(value, create=..., filter=...) <- parent`, shared by every rule's describe."""
    parts = [value] if value else []
    parts.append(f"create={str(options.create).lower()}")
    parts.append(f"filter={options.filter.describe()}")
    text = f"{name}({', '.join(parts)})"
    if options.parent is not None:
        text += f" parent={options.parent.describe()}"
    return text
