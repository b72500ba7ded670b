"""The `fixed` rule: a queue named in the configuration (spec E4, H5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.errors import QueueConfigError
from engine.queue.names import INVALID_QUEUE_NAME, is_fully_qualified, is_valid_queue_level
from engine.queue.rules.base import (
    Applicant,
    QueueLookup,
    RuleOptions,
    RuleResult,
    RuleSpec,
    describe_rule,
    finish,
    place_below_parent,
)

__all__ = ["FixedRule"]


@dataclass(frozen=True, slots=True)
class FixedRule:
    """Always the configured queue; dots in the value are levels and are never replaced."""

    NAME: ClassVar[str] = "fixed"
    options: RuleOptions
    queue: str

    @classmethod
    def from_spec(cls, spec: RuleSpec, options: RuleOptions) -> FixedRule:
        """Check the value (E4).

        Raises:
            QueueConfigError: no value, an invalid level, or a qualified value with a parent rule.
        """
        if not spec.value:
            raise QueueConfigError("a fixed queue rule must have a queue name set")
        queue = spec.value.lower()
        if is_fully_qualified(queue) and spec.parent is not None:
            raise QueueConfigError("cannot have a fixed queue rule with qualified queue name and a parent rule")
        if not all(is_valid_queue_level(level) for level in queue.split(".")):
            raise QueueConfigError(INVALID_QUEUE_NAME)
        return cls(options, queue)

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """The filter runs first; a qualified value is used as is, others go below the parent or root."""
        if not self.options.filter.admits(app.user, app.groups):
            return None
        if is_fully_qualified(self.queue):
            return finish(self.options, self.queue, queues)
        return place_below_parent(self.options, self.queue, app, queues)

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options, self.queue)
