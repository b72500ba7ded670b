"""Prioritizer weights (spec E1–E6, and Spread's default): defaults, mode, coordinates, validation in spec order."""

from __future__ import annotations

from dataclasses import dataclass

from engine.cluster.pipeline.framework import Prioritizer
from engine.cluster.pipeline.plugins.spread import SPREAD
from engine.cluster.pipeline.registry import ADDON, BUILTIN_PRIORITIZERS, DEFAULT_WEIGHTS, SPREAD_DEFAULT_WEIGHT
from engine.cluster.pipeline.status import SUCCESS, PluginStatus
from topics.placement import PrioritizerPolicy

__all__ = ["Plan", "WeightedPrioritizer", "plan_prioritizers", "spread_weight"]

_Coordinate = tuple[str, ...]
Plan = tuple[tuple["WeightedPrioritizer", ...], PluginStatus]

_PLANS: dict[tuple[int, bool], tuple[PrioritizerPolicy, Plan]] = {}
"""Plans by policy object (kept in the entry, so its id is not reused): every evaluation and every
candidate-change check of a placement plans the same policy object."""
_PLANS_LIMIT = 1 << 15


@dataclass(frozen=True, slots=True)
class WeightedPrioritizer:
    """One enabled prioritizer (weight != 0) and its weight."""

    prioritizer: Prioritizer
    weight: int


def plan_prioritizers(policy: PrioritizerPolicy, spread: bool = False) -> Plan:
    """The enabled prioritizers in E4 order, or the first misconfiguration (mode, configurations, names).

    `spread`: the placement declares spread terms, which gives Spread a default weight in Additive mode.
    """
    memo = _PLANS.get((id(policy), spread))
    if memo is not None and memo[0] is policy:
        return memo[1]
    if len(_PLANS) >= _PLANS_LIMIT:  # replaced placements' policies must not pile up
        _PLANS.clear()
    plan = _plan(policy, spread)
    _PLANS[(id(policy), spread)] = (policy, plan)
    return plan


def spread_weight(plan: Plan) -> int:
    """The weight of Spread in a plan, 0 when it is not enabled."""
    return next((entry.weight for entry in plan[0] if entry.prioritizer.name == SPREAD), 0)


def _plan(policy: PrioritizerPolicy, spread: bool) -> Plan:
    weights: dict[_Coordinate, int] = {}
    if policy.mode == "Additive":
        for name, weight in DEFAULT_WEIGHTS:
            weights[("BuiltIn", name)] = weight
        if spread:  # only with terms: placements without them keep exactly the upstream weights
            weights[("BuiltIn", SPREAD)] = SPREAD_DEFAULT_WEIGHT
    elif policy.mode != "Exact":
        return (), PluginStatus.misconfigured("", f"incorrect prioritizer policy mode: {policy.mode}")
    for config in policy.configurations:
        coordinate = config.score_coordinate
        if coordinate is None:
            return (), PluginStatus.misconfigured("", "scoreCoordinate field is required")
        if coordinate.type == "BuiltIn":
            weights[("BuiltIn", coordinate.built_in)] = config.weight
        elif coordinate.add_on is None:
            return (), PluginStatus.misconfigured("", "addOn should not be empty")
        else:
            weights[("AddOn", coordinate.add_on.resource_name, coordinate.add_on.score_name)] = config.weight
    planned: list[WeightedPrioritizer] = []
    for key, weight in weights.items():
        if weight == 0:
            continue
        if key[0] == "BuiltIn":
            builtin = BUILTIN_PRIORITIZERS.get(key[1])
            if builtin is None:
                return (), PluginStatus.misconfigured("", f"incorrect builtin prioritizer: {key[1]}")
            planned.append(WeightedPrioritizer(builtin, weight))
        else:
            planned.append(WeightedPrioritizer(ADDON(key[1], key[2]), weight))
    return tuple(planned), SUCCESS
