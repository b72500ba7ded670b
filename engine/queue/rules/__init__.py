"""Placement rules and the one registry that maps configuration names to rule classes (spec E3)."""

from __future__ import annotations

from collections.abc import Callable

from engine.queue.rules.base import (
    Applicant,
    PlacementRule,
    QueueLookup,
    RuleError,
    RuleOptions,
    RuleResult,
    RuleSpec,
)
from engine.queue.rules.fixed import FixedRule
from engine.queue.rules.provided import ProvidedRule
from engine.queue.rules.recovery import RecoveryRule
from engine.queue.rules.tag import TagRule
from engine.queue.rules.user import UserRule

__all__ = [
    "RULE_FACTORIES",
    "Applicant",
    "FixedRule",
    "PlacementRule",
    "ProvidedRule",
    "QueueLookup",
    "RecoveryRule",
    "RuleError",
    "RuleFactory",
    "RuleOptions",
    "RuleResult",
    "RuleSpec",
    "TagRule",
    "UserRule",
]

RuleFactory = Callable[[RuleSpec, RuleOptions], PlacementRule]
"""Builds a rule from its parsed spec and already-built common options; raises QueueConfigError."""

RULE_FACTORIES: dict[str, RuleFactory] = {
    ProvidedRule.NAME: ProvidedRule.from_spec,
    UserRule.NAME: UserRule.from_spec,
    FixedRule.NAME: FixedRule.from_spec,
    TagRule.NAME: TagRule.from_spec,
    RecoveryRule.NAME: RecoveryRule.from_spec,
}
"""Every rule by its lower-case configuration name, in documentation order. `recovery` is internal: the
loader refuses it in a file and appends it to every rule set itself."""
