"""Predicate filter (spec C6–C16): predicates are ORed; label AND claim AND CEL within one.

A CEL evaluation stopped at the cost limit is "no match" for that cluster, like any runtime error; the filter then
also reports a Warning naming the first stopped expression (in spec order) among the placement's candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.cel_env import CelProgram
from engine.cluster.matching.selectors import EVERYTHING
from engine.cluster.pipeline.compiled import CompiledSelector
from engine.cluster.pipeline.framework import EvalContext, FilterResult
from engine.cluster.pipeline.status import SUCCESS, Code, PluginStatus

__all__ = ["PredicateFilter", "StoppedCount", "stopped_count"]

_STOPPED = "\x00stopped\x00"
"""Prefix of the outcome keys that record whether an evaluation was stopped (with the index of the expression after
a space: at that one). No expression list starts with NUL (it would not compile), so these never meet an outcome
key."""
_EVER_STOPPED: set[str] = set()
"""The expression lists (outcome keys) some evaluation in this process was stopped on. Only their cached "no match"
outcomes can be stopped evaluations, so only they are probed: skipping the others saves a cache lookup per cluster
and changes no answer. Past _EVER_STOPPED_KEPT lists every list is probed (one forgotten would lose its Warning)."""
_EVER_STOPPED_KEPT = 10_000
_SHOWN = 200
"""Characters of a stopped expression quoted in the Warning."""

Stops = tuple[tuple[str, NDArray[np.bool_]], ...]
"""(expression text, fleet mask of the clusters it was stopped on), in spec order."""


@dataclass(slots=True)
class StoppedCount:
    """How many CEL evaluations were stopped at the cost limit while matching against one view."""

    count: int = 0


def stopped_count(view: InventoryView) -> StoppedCount:
    """The view's count of stopped CEL evaluations (outcomes taken from caches are not evaluations)."""
    return view.memo(("Predicate", "stopped CEL evaluations"), StoppedCount)


class _StopProbe(CelProgram):
    """Whether the program's evaluation on a cluster was stopped (at expression `index`, or at any when None).

    It answers through `view.cel_matches` under its own key, so the answer is kept exactly as long as the
    outcome it qualifies (same cluster object, same values read, same version): a cached "no match" is told
    apart from a stopped evaluation without evaluating again. On a miss it asks the program, which remembers its
    last evaluation (and evaluates again only if that was another cluster's)."""

    def __init__(self, program: CelProgram, index: int | None = None) -> None:  # no CelProgram state: it asks `program`
        self.program = program
        self._index = index

    def matches(self, cluster: Any) -> bool:
        """Stopped, or stopped at `index`."""
        stopped = self.program.stopped_at(cluster)
        return stopped is not None and (self._index is None or stopped == self._index)


def _stopped_at(view: InventoryView, selector: CompiledSelector, name: str, probe: _StopProbe, key: str) -> int | None:
    """The expression stopped on cluster `name` (whose outcome was "no match"), None when none was. `key` is the
    probe's outcome key (one string per selector: the caches keep it once per cluster)."""
    pure, reads = selector.cel_pure, selector.cel_reads
    if not view.cel_matches((key, name), pure, probe, reads):
        return None
    if len(selector.cel) == 1:
        return 0
    for index in range(len(selector.cel)):
        indexed = f"\x00stopped {index}\x00{selector.cel_key}"
        if view.cel_matches((indexed, name), pure, _StopProbe(probe.program, index), reads):
            return index
    return None


def _matching(view: InventoryView, predicates: tuple[CompiledSelector, ...]) -> tuple[NDArray[np.bool_], Stops]:
    """Every cluster of the inventory that matches at least one predicate, and where CEL was stopped."""
    remaining = view.names()
    matched: set[str] = set()
    stops: list[tuple[str, set[str]]] = []
    for selector in predicates:
        pool = remaining
        if selector.labels != EVERYTHING:
            pool = pool & view.selected("label", selector.labels)
        if selector.claims != EVERYTHING:
            pool = pool & view.selected("claim", selector.claims)
        if selector.cel and pool:
            program = CelProgram(selector.cel, view.cel_activation())
            probe, probe_key = _StopProbe(program), _STOPPED + selector.cel_key
            text, pure, reads = selector.cel_key, selector.cel_pure, selector.cel_reads
            kept: set[str] = set()
            stopped: dict[int, set[str]] = {}
            probing = text in _EVER_STOPPED or len(_EVER_STOPPED) >= _EVER_STOPPED_KEPT
            for name in pool:
                if view.cel_matches((text, name), pure, program, reads):
                    kept.add(name)
                    continue
                if not probing:
                    if not program.stopped:
                        continue
                    _EVER_STOPPED.add(text)
                    probing = True
                index = _stopped_at(view, selector, name, probe, probe_key)
                if index is not None:
                    stopped.setdefault(index, set()).add(name)
            stops.extend((selector.cel[index].text, stopped[index]) for index in sorted(stopped))
            stopped_count(view).count += program.stopped
            pool = frozenset(kept)
        matched |= pool
        remaining -= pool
        if not remaining:
            break
    fleet = view.fleet()
    return fleet.mask(matched), tuple((text, fleet.mask(names)) for text, names in stops)


def _warning(text: str) -> PluginStatus:
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return PluginStatus(Code.WARNING, PredicateFilter.NAME, f'CEL expression "{shown}" stopped: cost limit exceeded')


class PredicateFilter:
    """Keeps the candidates that match at least one predicate."""

    NAME: ClassVar[str] = "Predicate"

    def filter(self, ctx: EvalContext, candidates: Ids) -> FilterResult:
        """An empty candidate list returns before any selector is looked at (C6)."""
        if not len(candidates):
            return FilterResult(candidates)
        compiled = ctx.compiled
        if compiled.predicate_error is not None:
            return FilterResult(candidates[:0], PluginStatus.misconfigured(self.NAME, compiled.predicate_error))
        if not ctx.placement.spec.predicates:
            return FilterResult(candidates)
        # thousands of placements share a handful of predicate lists: match each once per inventory version,
        # over the whole inventory, and keep the candidates in the set
        view = ctx.view
        matched, stops = view.memo((self.NAME, compiled.predicate_key), lambda: _matching(view, compiled.predicates))
        status = next((_warning(text) for text, mask in stops if mask[candidates].any()), SUCCESS)
        return FilterResult(candidates[matched[candidates]], status)
