"""Placement conditions (spec J1–J4) with SetStatusCondition's lastTransitionTime rule."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from engine.cluster.pipeline.status import Code, PluginStatus
from topics.interning import ByIdentity, Interner, Interning
from topics.k8s import Condition

__all__ = [
    "MISCONFIGURED",
    "SATISFIED",
    "ConditionPools",
    "misconfigured_condition",
    "satisfied_condition",
    "set_conditions",
]


class ConditionPools:
    """A runtime's conditions (`Interning.pools`): placements decided at one instant mostly publish equal
    conditions, so one object per distinct condition (`shared`), stamped once per condition and instant."""

    __slots__ = ("shared", "stamped")

    def __init__(self) -> None:
        self.shared: Interner[Condition] = Interner()
        self.stamped: ByIdentity[Condition] = ByIdentity()
        """Stamped copies by (computed condition, transition time): computed conditions are shared objects and a
        batch's placements are stamped with one instant, so a copy is made once per condition and instant."""

    def stamp(self, condition: Condition, when: datetime) -> Condition:
        """The shared copy of `condition` with `when` as its lastTransitionTime."""
        return self.shared(condition.model_copy(update={"last_transition_time": when}))


MISCONFIGURED = "PlacementMisconfigured"
SATISFIED = "PlacementSatisfied"


@lru_cache(maxsize=256)
def _condition(kind: str, ok: bool, reason: str, message: str) -> Condition:
    """One shared (frozen) object per distinct condition: every evaluation builds two, mostly the same ones."""
    return Condition(type=kind, status="True" if ok else "False", reason=reason, message=message)


def misconfigured_condition(status: PluginStatus) -> Condition:
    """True only for a final Misconfigured status (Warning and Error count as configured)."""
    if status.code is Code.MISCONFIGURED:
        return _condition(MISCONFIGURED, True, "Misconfigured", status.condition_message())
    return _condition(MISCONFIGURED, False, "Succeedconfigured", "Placement configurations check pass")


def satisfied_condition(
    *,
    has_bindings: bool,
    cluster_sets: Sequence[str],
    eligible_sets: Sequence[str],
    available: int,
    status: PluginStatus,
    selected: int,
    unscheduled: int,
    cause: str = "",
) -> Condition:
    """The first matching rule of J2; `cause` says why clusters stayed unscheduled (a spread skew limit)."""

    def cond(ok: bool, reason: str, message: str) -> Condition:
        return _condition(SATISFIED, ok, reason, message)

    if not has_bindings:
        return cond(
            False, "NoManagedClusterSetBindings", "No valid ManagedClusterSetBindings found in placement namespace"
        )
    if not eligible_sets:
        joined = ",".join(cluster_sets)
        return cond(False, "NoIntersection", f"None of ManagedClusterSets [{joined}] is bound to placement namespace")
    if available == 0:
        joined = ",".join(eligible_sets)
        return cond(
            False, "AllManagedClusterSetsEmpty", f"All ManagedClusterSets [{joined}] have no member ManagedCluster"
        )
    if status.code is Code.ERROR:
        return cond(False, "NotAllDecisionsScheduled", status.message)
    if selected == 0:
        return cond(False, "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate")
    if unscheduled == 0:
        return cond(True, "AllDecisionsScheduled", "All cluster decisions scheduled")
    suffix = f": {cause}" if cause else ""
    return cond(False, "NotAllDecisionsScheduled", f"{unscheduled} cluster decisions unscheduled{suffix}")


def set_conditions(
    previous: Sequence[Condition], new: Sequence[Condition], now: datetime, interning: Interning
) -> list[Condition]:
    """Keep a condition's lastTransitionTime unless its status flips (new conditions get `now`); a condition
    that did not change at all is the previous object, a new one the runtime's shared copy."""
    pools = interning.pools(ConditionPools)
    by_type = {c.type: c for c in previous}
    out: list[Condition] = []
    for condition in new:
        old = by_type.get(condition.type)
        if old is not None and old.last_transition_time is not None and _same_but_time(old, condition):
            out.append(old)
            continue
        when = old.last_transition_time if old is not None and old.status == condition.status else None
        out.append(pools.stamped.get((condition, when or now), pools.stamp))
    return out


def _same_but_time(old: Condition, new: Condition) -> bool:
    """Whether the two conditions differ at most in lastTransitionTime (which the result takes from `old`)."""
    return {**old.__dict__, "last_transition_time": new.last_transition_time} == new.__dict__ and (
        old.model_extra == new.model_extra
    )
