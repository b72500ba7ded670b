"""The `provided` rule: the queue named in the submission (spec H1-H3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.queue.names import is_fully_qualified
from engine.queue.rules.base import (
    Applicant,
    QueueLookup,
    RuleOptions,
    RuleResult,
    RuleSpec,
    check_level,
    describe_rule,
    finish,
    place_one_level,
)

__all__ = ["ProvidedRule", "place_named_queue"]


def place_named_queue(options: RuleOptions, requested: str, app: Applicant, queues: QueueLookup) -> RuleResult:
    """Turn a requested name (provided queue or tag value) into a queue (H2, H3).

    A fully qualified name skips the parent rule and keeps its dots as levels; any other name has its dots
    replaced and goes below the parent rule's result.
    """
    if is_fully_qualified(requested):
        for level in requested.split("."):
            if (error := check_level(level)) is not None:
                return error
        return finish(options, requested, queues)
    return place_one_level(options, requested, app, queues)


@dataclass(frozen=True, slots=True)
class ProvidedRule:
    """Places the application in the queue it asked for."""

    NAME: ClassVar[str] = "provided"
    options: RuleOptions

    @classmethod
    def from_spec(cls, spec: RuleSpec, options: RuleOptions) -> ProvidedRule:
        """`value` is ignored (E6)."""
        del spec
        return cls(options)

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """An empty request is no match before the filter runs (H1)."""
        if not app.queue or not self.options.filter.admits(app.user, app.groups):
            return None
        return place_named_queue(self.options, app.queue, app, queues)

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options)
