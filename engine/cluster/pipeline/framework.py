"""What filters and prioritizers see and return (upstream's plugin framework, reduced).

Every plugin reads one `EvalContext` and returns a result value carrying a PluginStatus; nothing raises for
"no match". Plugins also report the instants at which their answer would change (spec L6). Candidates are
fleet ids in name order (`engine.cluster.fleet.ids`); scores are arrays aligned with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Fleet, Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.compiled import CompiledPlacement
from engine.cluster.pipeline.status import SUCCESS, PluginStatus
from engine.core import CEL_PLACEMENT_BUDGET
from engine.inventory import Inventory
from topics.placement import Placement

__all__ = [
    "BalanceCounts",
    "CandidateIndependent",
    "ClusterFilter",
    "EvalContext",
    "FilterResult",
    "MappingCounts",
    "Prioritizer",
    "ScoreResult",
    "ValueRange",
]


class BalanceCounts(Protocol):
    """How often each cluster is in the current decisions of all *other* placements (spec F2)."""

    def count(self, cluster: str) -> int:
        """Occurrences of `cluster`."""
        ...

    def max_count(self) -> int:
        """The largest count over every counted cluster, candidate or not."""
        ...

    def over(self, fleet: Fleet) -> NDArray[np.int64]:
        """Every cluster's count by fleet id (a fresh array the caller may keep)."""
        ...


@dataclass(frozen=True, slots=True)
class MappingCounts:
    """BalanceCounts over a plain mapping (tests, explain replays)."""

    counts: Mapping[str, int] = field(default_factory=dict)

    def count(self, cluster: str) -> int:
        """Occurrences of `cluster`."""
        return self.counts.get(cluster, 0)

    def max_count(self) -> int:
        """The largest count, 0 when nothing is counted."""
        return max(self.counts.values(), default=0)

    def over(self, fleet: Fleet) -> NDArray[np.int64]:
        """The counts as given, by fleet id."""
        return fleet.values(self.counts, 0).astype(np.int64)


@dataclass(slots=True)
class EvalContext:
    """The inputs of one evaluation of one placement (spec A5)."""

    placement: Placement
    view: InventoryView
    now: datetime
    current: frozenset[str]
    """This placement's most recently published decision (spec D10)."""
    others: BalanceCounts
    compiled: CompiledPlacement
    explain: bool = False
    """Keep every prioritizer's raw scores (explain data, K4); otherwise scores may go straight into totals."""
    current_ids: Ids | None = None
    """`current` as the fleet's ids when the caller already has them (None: converted when read)."""
    cel_budget: int = CEL_PLACEMENT_BUDGET
    """CEL cost units this evaluation may spend over all candidates (C17)."""

    @property
    def inventory(self) -> Inventory:
        """The inventory behind the view."""
        return self.view.inventory

    @property
    def fleet(self) -> Fleet:
        """The cluster ids of the view."""
        return self.view.fleet()

    def held_ids(self) -> Ids:
        """`current` as fleet ids, ascending."""
        return self.fleet.ids(self.current) if self.current_ids is None else self.current_ids


@dataclass(frozen=True, slots=True)
class FilterResult:
    """Clusters that passed, in candidate order, plus the instants when a toleration runs out."""

    passed: Ids
    status: PluginStatus = SUCCESS
    due: tuple[datetime, ...] = ()


@dataclass(slots=True)
class ValueRange:
    """The lowest and highest input value over an evaluation's candidates, and how many candidates hold each.

    A prioritizer normalised over its candidates (F4) keeps this between evaluations: a candidate that leaves
    moves the other candidates' scores only when it was the last one at either end.
    """

    low: float
    at_low: int
    high: float
    at_high: int

    @classmethod
    def of(cls, values: NDArray[np.float64]) -> ValueRange:
        """The range of a non-empty array of values."""
        low, high = values.min(), values.max()
        return cls(float(low), int(np.count_nonzero(values == low)), float(high), int(np.count_nonzero(values == high)))

    def drop(self, value: float) -> bool:
        """Record that a candidate holding `value` left; False, and nothing recorded, when an end moves."""
        if (value == self.low and self.at_low == 1) or (value == self.high and self.at_high == 1):
            return False
        self.at_low -= value == self.low
        self.at_high -= value == self.high
        return True


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Raw scores of one prioritizer, aligned with the candidates."""

    scores: NDArray[np.int64]
    scored: NDArray[np.bool_] | None = None
    """The candidates it gave a score (the others hold 0 and are left out of explain data); None: all."""
    status: PluginStatus = SUCCESS
    due: tuple[datetime, ...] = ()
    range: ValueRange | None = None
    """The input range the scores were normalised over, for a prioritizer whose scores depend on it."""


class ClusterFilter(Protocol):
    """A filter step (spec C6–D9)."""

    NAME: ClassVar[str]

    def filter(self, ctx: EvalContext, candidates: Ids) -> FilterResult:
        """Keep the candidates that pass."""
        ...


class Prioritizer(Protocol):
    """A scoring step (spec F); `name` is the F9 result name."""

    NAME: ClassVar[str]

    @property
    def name(self) -> str:
        """The name reported in results and explain data."""
        ...

    def score(self, ctx: EvalContext, candidates: Ids) -> ScoreResult:
        """Score the candidates."""
        ...

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """Whether `cluster` leaving the candidates can change the other candidates' scores or the status.

        `ranges`: the ValueRange of each prioritizer (by name) from the placement's last evaluation, None when
        unknown. A prioritizer may record the departure in its range when it answers False.
        """
        ...


class CandidateIndependent:
    """Base of prioritizers whose score of a cluster does not depend on which other clusters are candidates."""

    def leaving_matters(
        self, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
    ) -> bool:
        """A departing candidate moves no other score."""
        return False
