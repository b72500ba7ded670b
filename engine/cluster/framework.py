"""What filters and prioritizers see and return (upstream's plugin framework, reduced).

Every plugin reads one `EvalContext` and returns a result value carrying a PluginStatus; nothing raises for
"no match". Plugins also report the instants at which their answer would change (spec L6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol, TypeGuard, runtime_checkable

from engine.cluster.compiled import CompiledPlacement
from engine.cluster.status import SUCCESS, PluginStatus
from engine.cluster.views import InventoryView
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
    "WeightedAdder",
    "adds_weighted",
]


class BalanceCounts(Protocol):
    """How often each cluster is in the current decisions of all *other* placements (spec F2)."""

    def count(self, cluster: str) -> int:
        """Occurrences of `cluster`."""
        ...

    def max_count(self) -> int:
        """The largest count over every counted cluster, candidate or not."""
        ...

    def snapshot(self) -> tuple[Mapping[str, int], frozenset[str]]:
        """Raw counts and the clusters to subtract one from (the placement's own decision); for bulk reads."""
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

    def snapshot(self) -> tuple[Mapping[str, int], frozenset[str]]:
        """The counts as given; nothing to subtract."""
        return self.counts, frozenset()


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

    @property
    def inventory(self) -> Inventory:
        """The inventory behind the view."""
        return self.view.inventory


@dataclass(frozen=True, slots=True)
class FilterResult:
    """Clusters that passed, in candidate order, plus the instants when a toleration runs out."""

    passed: list[str]
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
    def of(cls, values: list[float]) -> ValueRange:
        """The range of a non-empty list of values."""
        low, high = min(values), max(values)
        return cls(low, values.count(low), high, values.count(high))

    def drop(self, value: float) -> bool:
        """Record that a candidate holding `value` left; False, and nothing recorded, when an end moves."""
        if (value == self.low and self.at_low == 1) or (value == self.high and self.at_high == 1):
            return False
        self.at_low -= value == self.low
        self.at_high -= value == self.high
        return True


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Raw scores of one prioritizer (clusters it gives no score are absent)."""

    scores: dict[str, int]
    status: PluginStatus = SUCCESS
    due: tuple[datetime, ...] = ()
    range: ValueRange | None = None
    """The input range the scores were normalised over, for a prioritizer whose scores depend on it."""


class ClusterFilter(Protocol):
    """A filter step (spec C6–D9)."""

    NAME: ClassVar[str]

    def filter(self, ctx: EvalContext, candidates: list[str]) -> FilterResult:
        """Keep the candidates that pass."""
        ...


class Prioritizer(Protocol):
    """A scoring step (spec F); `name` is the F9 result name."""

    NAME: ClassVar[str]

    @property
    def name(self) -> str:
        """The name reported in results and explain data."""
        ...

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
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


@runtime_checkable
class WeightedAdder(Protocol):
    """A prioritizer that can add its weighted scores to the totals without building them first (E7).

    Only for prioritizers that score every candidate with no status and no timer; the result must equal
    totals + weight × `score()` for every candidate, which the tests check against `score()`.
    """

    def add_weighted(self, ctx: EvalContext, totals: dict[str, int], weight: int) -> dict[str, int]:
        """The new totals (`totals` may be updated in place and returned)."""
        ...


_ADDS_WEIGHTED: dict[type, bool] = {}


def adds_weighted(prioritizer: object) -> TypeGuard[WeightedAdder]:
    """isinstance(prioritizer, WeightedAdder), answered once per class: a runtime protocol check walks the
    protocol's members every time, and this runs for every prioritizer of every evaluation."""
    kind = type(prioritizer)
    known = _ADDS_WEIGHTED.get(kind)
    if known is None:
        known = _ADDS_WEIGHTED[kind] = isinstance(prioritizer, WeightedAdder)
    return known
