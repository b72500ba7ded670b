"""The one registry of pipeline plugins, in pipeline order (spec B1, E6, and the spread filter after the taints).

Filters run in the order listed. Built-in prioritizers are looked up by their `builtIn` name; any other
coordinate type is an AddOn prioritizer, built per (resourceName, scoreName).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.cluster.pipeline.framework import ClusterFilter, Prioritizer
from engine.cluster.pipeline.plugins.addon import AddOnPrioritizer
from engine.cluster.pipeline.plugins.balance import BalancePrioritizer
from engine.cluster.pipeline.plugins.predicate import PredicateFilter
from engine.cluster.pipeline.plugins.resource import ResourceAllocatablePrioritizer
from engine.cluster.pipeline.plugins.spread import SpreadFilter, SpreadPrioritizer
from engine.cluster.pipeline.plugins.steady import SteadyPrioritizer
from engine.cluster.pipeline.plugins.taint_toleration import TaintTolerationFilter

__all__ = ["ADDON", "BUILTIN_PRIORITIZERS", "DEFAULT_WEIGHTS", "FILTERS", "SPREAD_DEFAULT_WEIGHT"]

FILTERS: tuple[ClusterFilter, ...] = (PredicateFilter(), TaintTolerationFilter(), SpreadFilter())
"""Filters in pipeline order."""

BUILTIN_PRIORITIZERS: dict[str, Prioritizer] = {
    BalancePrioritizer.NAME: BalancePrioritizer(),
    SteadyPrioritizer.NAME: SteadyPrioritizer(),
    "ResourceAllocatableCPU": ResourceAllocatablePrioritizer("ResourceAllocatableCPU", "cpu"),
    "ResourceAllocatableMemory": ResourceAllocatablePrioritizer("ResourceAllocatableMemory", "memory"),
    SpreadPrioritizer.NAME: SpreadPrioritizer(),
}
"""Built-in prioritizers by `builtIn` name."""

ADDON: Callable[[str, str], Prioritizer] = AddOnPrioritizer
"""Builds the AddOn prioritizer of one (resourceName, scoreName) coordinate."""

DEFAULT_WEIGHTS: tuple[tuple[str, int], ...] = ((BalancePrioritizer.NAME, 1), (SteadyPrioritizer.NAME, 1))
"""Additive-mode defaults, in result order (spec E1, E4)."""

SPREAD_DEFAULT_WEIGHT = 2
"""Additive mode adds Spread with this weight, after the defaults above, when the placement has spread terms."""
