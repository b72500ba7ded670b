"""The `user` rule: a queue named after the submitting user (spec H4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.queue.names import replace_dots
from engine.queue.rules.base import (
    Applicant,
    QueueLookup,
    RuleOptions,
    RuleResult,
    RuleSpec,
    check_level,
    describe_rule,
    place_below_parent,
)

__all__ = ["UserRule"]


@dataclass(frozen=True, slots=True)
class UserRule:
    """Places the application in a queue named like its user; the name is never fully qualified."""

    NAME: ClassVar[str] = "user"
    options: RuleOptions

    @classmethod
    def from_spec(cls, spec: RuleSpec, options: RuleOptions) -> UserRule:
        """`value` is ignored (E6)."""
        del spec
        return cls(options)

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """Filter first, then the name check, and only then the parent rule."""
        if not self.options.filter.admits(app.user, app.groups):
            return None
        level = replace_dots(app.user)
        if (error := check_level(level)) is not None:
            return error
        return place_below_parent(self.options, level, app, queues)

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options)
