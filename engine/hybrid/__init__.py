"""Hybrid placement (hybrid spec): PlacementRules reduced in rounds with external advisors.

`HybridPlacementEngine` is the SubjectEngine; `RuleDriver` drives one rule without Kafka (tests, what-if runs).
"""

from engine.hybrid.driver import RuleDriver
from engine.hybrid.engine import HybridPlacementEngine, subject_key
from engine.hybrid.state import RuleState

__all__ = ["HybridPlacementEngine", "RuleDriver", "RuleState", "subject_key"]
