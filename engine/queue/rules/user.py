"""The `user` rule: a queue named after the submitting user (spec H4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.queue.rules.base import (
    Applicant,
    QueueLookup,
    RuleOptions,
    RuleResult,
    RuleSpec,
    describe_rule,
    place_one_level,
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
        return place_one_level(self.options, app.user, app, queues)

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options)
