"""Hybrid placement (hybrid spec): PlacementRules reduced in rounds with external advisors.

`HybridPlacementEngine` is the SubjectEngine (a single-rule driver for tests is `tests/engine/drivers/hybrid.py`).
"""

from engine.hybrid.engine import HybridPlacementEngine, subject_key
from engine.hybrid.state import RuleState

__all__ = ["HybridPlacementEngine", "RuleState", "subject_key"]
