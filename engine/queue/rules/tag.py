"""The `tag` rule: a queue named by an application tag (spec E5, H6, H7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.errors import QueueConfigError
from engine.queue.rules.base import Applicant, QueueLookup, RuleOptions, RuleResult, RuleSpec, describe_rule
from engine.queue.rules.provided import place_named_queue

__all__ = ["TagRule"]


@dataclass(frozen=True, slots=True)
class TagRule:
    """Uses the value of the tag named in the rule like a requested queue (Kubernetes: `namespace`)."""

    NAME: ClassVar[str] = "tag"
    options: RuleOptions
    tag_name: str

    @classmethod
    def from_spec(cls, spec: RuleSpec, options: RuleOptions) -> TagRule:
        """The tag name is required and lower-cased (E5).

        Raises:
            QueueConfigError: no tag name.
        """
        if not spec.value:
            raise QueueConfigError("a tag queue rule must have a tag name set")
        return cls(options, spec.value.lower())

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """A missing or empty tag is no match before the filter runs."""
        value = app.tag(self.tag_name)
        if not value or not self.options.filter.admits(app.user, app.groups):
            return None
        return place_named_queue(self.options, value, app, queues)

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options, self.tag_name)
