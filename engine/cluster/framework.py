"""What filters and prioritizers see and return (upstream's plugin framework, reduced).

Every plugin reads one `EvalContext` and returns a result value carrying a PluginStatus; nothing raises for
"no match". Plugins also report the instants at which their answer would change (spec L6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol, runtime_checkable

from engine.cluster.compiled import CompiledPlacement
from engine.cluster.status import SUCCESS, PluginStatus
from engine.cluster.views import InventoryView
from engine.inventory import Inventory
from topics.placement import Placement

__all__ = [
    "BalanceCounts",
    "ClusterFilter",
    "EvalContext",
    "FilterResult",
    "MappingCounts",
    "Prioritizer",
    "ScoreResult",
    "WeightedAdder",
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


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Raw scores of one prioritizer (clusters it gives no score are absent)."""

    scores: dict[str, int]
    status: PluginStatus = SUCCESS
    due: tuple[datetime, ...] = ()


class ClusterFilter(Protocol):
    """A filter step (spec C6–D9)."""

    NAME: ClassVar[str]

    def filter(self, ctx: EvalContext, candidates: list[str]) -> FilterResult:
        """Keep the candidates that pass."""
        ...


class Prioritizer(Protocol):
    """A scoring step (spec F); `name` is the F9 result name."""

    NAME: ClassVar[str]
    RELATIVE: ClassVar[bool]
    """Scores are normalised over the candidates, so adding or removing any candidate can move the others."""

    @property
    def name(self) -> str:
        """The name reported in results and explain data."""
        ...

    def score(self, ctx: EvalContext, candidates: list[str]) -> ScoreResult:
        """Score the candidates."""
        ...


@runtime_checkable
class WeightedAdder(Protocol):
    """A prioritizer that can add its weighted scores to the totals without building them first (E7).

    Only for prioritizers that score every candidate with no status and no timer; the result must equal
    totals + weight × `score()` for every candidate, which the tests check against `score()`.
    """

    def add_weighted(self, ctx: EvalContext, totals: dict[str, int], weight: int) -> dict[str, int]:
        """The new totals (`totals` may be updated in place and returned)."""
        ...
