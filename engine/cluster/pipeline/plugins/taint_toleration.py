"""TaintToleration filter (spec D1–D9): every taint of a cluster must be tolerated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.framework import EvalContext, FilterResult
from engine.cluster.pipeline.status import PluginStatus
from topics.inventory import Taint
from topics.placement import Toleration

__all__ = ["TaintTolerationFilter", "taint_outcome"]

_PREFER_NO_SELECT = "PreferNoSelect"
_NO_SELECT_IF_NEW = "NoSelectIfNew"


def _validate(tolerations: Sequence[Toleration]) -> str | None:
    for toleration in tolerations:
        if not toleration.key and toleration.operator != "Exists":
            return "If the key is empty, operator must be Exists."
        if toleration.operator == "Exists" and toleration.value:
            return "If the operator is Exists, the value should be empty."
    return None


def _matches(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _tolerated(taint: Taint, tolerations: Sequence[Toleration], now: datetime) -> tuple[bool, datetime | None]:
    """Whether the first matching, unexpired toleration covers the taint, and until when (None: forever)."""
    for toleration in tolerations:
        if not _matches(toleration, taint):
            continue
        if toleration.toleration_seconds is None:
            return True, None
        added = taint.time_added or now
        until = added + timedelta(seconds=toleration.toleration_seconds)
        if now < until:
            return True, until
    return False, None


def taint_outcome(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], now: datetime, *, held: bool
) -> tuple[bool, tuple[datetime, ...]]:
    """Whether a cluster with these taints passes (D1–D9), and the instants its tolerations run out.

    `held`: the cluster is in the placement's current decisions (NoSelectIfNew then does not filter it).
    """
    expiries: list[datetime] = []
    for taint in taints:
        if taint.effect == _PREFER_NO_SELECT:
            continue
        if taint.effect == _NO_SELECT_IF_NEW and held:
            continue
        covered, until = _tolerated(taint, tolerations, now)
        if not covered:
            return False, ()
        if until is not None:
            expiries.append(until)
    return True, tuple(expiries)


@dataclass(frozen=True, slots=True)
class _Outcomes:
    """The taint filter's answer for one toleration list at one instant, over every tainted cluster."""

    failed_if_new: frozenset[str]
    """Fail unless held (an untolerated NoSelectIfNew taint)."""
    failed_if_none_held: NDArray[np.bool_]
    """By fleet id: fail for a placement that holds none of `failed_if_new`."""
    expiries: dict[str, tuple[tuple[datetime, ...], tuple[datetime, ...]]]
    """(when held, when new): when its tolerations run out, for the clusters that pass on a timer."""


def _outcomes(view: InventoryView, tolerations: Sequence[Toleration], now: datetime) -> _Outcomes:
    failed: set[str] = set()
    failed_if_new: set[str] = set()
    expiries: dict[str, tuple[tuple[datetime, ...], tuple[datetime, ...]]] = {}
    taints_of = view.inventory.taints_of
    for name in view.tainted():
        taints = taints_of(name)
        held = taint_outcome(taints, tolerations, now, held=True)
        new = taint_outcome(taints, tolerations, now, held=False)
        if not held[0]:
            failed.add(name)
            continue
        if not new[0]:
            failed_if_new.add(name)
        if held[1] or new[1]:
            expiries[name] = (held[1], new[1])
    fleet = view.fleet()
    return _Outcomes(frozenset(failed_if_new), fleet.mask(failed | failed_if_new), expiries)


class TaintTolerationFilter:
    """Removes clusters with a taint the placement does not tolerate."""

    NAME: ClassVar[str] = "TaintToleration"

    def filter(self, ctx: EvalContext, candidates: Ids) -> FilterResult:
        """Also reports when each tolerated-for-a-while taint runs out (timer input, L6)."""
        if not len(candidates):
            return FilterResult(candidates)
        tolerations = ctx.placement.spec.tolerations
        problem = _validate(tolerations)
        if problem is not None:
            return FilterResult(candidates[:0], PluginStatus.misconfigured(self.NAME, problem))
        view, now, current = ctx.view, ctx.now, ctx.current
        # every placement with the same tolerations sees the same outcomes in one inventory version
        outcomes = view.memo((self.NAME, tuple(tolerations), now), lambda: _outcomes(view, tolerations, now))
        failed = outcomes.failed_if_none_held
        held = outcomes.failed_if_new & current  # walks the smaller set: a few tainted clusters
        if held:
            failed = failed.copy()
            failed[ctx.fleet.ids(held)] = False
        passed = candidates[~failed[candidates]]
        if not outcomes.expiries:
            return FilterResult(passed)
        fleet = ctx.fleet
        passing = np.zeros(len(fleet), dtype=np.bool_)
        passing[passed] = True
        due: list[datetime] = []
        for name, (when_held, when_new) in outcomes.expiries.items():  # tainted clusters: all in the fleet
            if passing[fleet.position[name]]:
                due.extend(when_held if name in current else when_new)
        return FilterResult(passed, due=tuple(due))
