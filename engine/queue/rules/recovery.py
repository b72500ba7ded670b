"""The internal `recovery` rule, always last: forced applications land in `root.@recovery@` (spec H12)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from engine.queue.names import RECOVERY_QUEUE
from engine.queue.rules.base import Applicant, QueueLookup, RuleOptions, RuleResult, RuleSpec, describe_rule

__all__ = ["RecoveryRule"]


@dataclass(frozen=True, slots=True)
class RecoveryRule:
    """Never configurable; appended to every rule set (E2)."""

    NAME: ClassVar[str] = "recovery"
    options: RuleOptions = field(default_factory=RuleOptions)

    @classmethod
    def from_spec(cls, spec: RuleSpec, options: RuleOptions) -> RecoveryRule:
        """Only used internally; the configuration loader refuses the name (E3)."""
        del spec
        return cls(options)

    def place(self, app: Applicant, queues: QueueLookup) -> RuleResult:
        """The recovery queue for forced applications, no match for everyone else."""
        del queues
        return RECOVERY_QUEUE if app.forced else None

    def describe(self) -> str:
        """Rule text for logs."""
        return describe_rule(self.NAME, self.options)
