"""Selected clusters per topology during the spread loop, and what a step needs from them per class: whether
its next member passes every skew check, and its raw spread score.

Term i's score of a topology is 63 scaled linearly from its sibling group's most selected topology (0) to its
least selected one (63), floored, and 0 when the group is level or the class is not in the term. The raw score
puts term 0 first: each term is one base-64 digit. A hard term's check: every group of a hard term is kept
within maxSkew by these checks, so the skew after adding to topology T is within the limit exactly when
count(T) + 1 - min(group) is.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from engine.cluster.pipeline.spread.terms import SpreadTerm
from engine.cluster.pipeline.spread.topology import Topologies

__all__ = ["FewCounts", "ManyCounts", "term_score", "term_scores"]

_TERM_TOP = 63
_BASE = 64

Scores = NDArray[np.int64]


def term_score(count: int, high: int, low: int) -> int:
    """A term's score of a topology with `count` selected, in a group whose counts run from `low` to `high`."""
    return (_TERM_TOP * (high - count)) // (high - low) if high > low else 0


def term_scores(inside: NDArray[np.bool_], count: Scores, high: Scores, low: Scores) -> Scores:
    """`term_score` of many topologies at once (0 outside the term)."""
    span = high - low
    scores: Scores = np.where(inside & (span > 0), (_TERM_TOP * (high - count)) // np.maximum(span, 1), 0)
    return scores


class FewCounts:
    """The counts as lists, for a few classes: one plain Python pass over them per step."""

    def __init__(self, terms: tuple[SpreadTerm, ...], topologies: Topologies) -> None:
        self.terms = len(terms)
        self.skew: list[int | None] = [term.max_skew if term.hard else None for term in terms]
        self.group: list[list[int]] = [group.tolist() for group in topologies.group]
        self.count: list[list[int]] = [[0] * len(group) for group in topologies.group]
        self.high: list[list[int]] = [[0] * groups for groups in topologies.groups]
        self.low: list[list[int]] = [[0] * groups for groups in topologies.groups]
        self.siblings: list[list[list[int]]] = [[[] for _ in range(groups)] for groups in topologies.groups]
        for term, group in enumerate(self.group):
            for topology, parent in enumerate(group):
                self.siblings[term][parent].append(topology)
        per_term = [[int(value) for value in column] for column in topologies.class_topology]
        classes = len(per_term[0]) if per_term else 0
        self.chain: list[list[tuple[int, int, int]]] = []
        """Per class: (term, topology, its group) of every term it is in (a prefix of the terms)."""
        for cls in range(classes):
            chain: list[tuple[int, int, int]] = []
            for term, column in enumerate(per_term):
                if column[cls] < 0:
                    break
                chain.append((term, column[cls], self.group[term][column[cls]]))
            self.chain.append(chain)

    def check(self, live: list[int], weight: int) -> tuple[list[int], list[int], set[int]]:
        """The live classes that pass every skew check, their raw scores (0 when `weight` is 0), and the hard
        terms that rejected any live class."""
        allowed: list[int] = []
        raws: list[int] = []
        rejecting: set[int] = set()
        count, high, low, skew = self.count, self.high, self.low, self.skew
        for cls in live:
            passes, raw = True, 0
            chain = self.chain[cls]
            for term, topology, parent in chain:
                selected = count[term][topology]
                least = low[term][parent]
                limit = skew[term]
                if limit is not None and selected - least >= limit:  # one more would exceed maxSkew
                    passes = False
                    rejecting.add(term)
                if weight:
                    most = high[term][parent]
                    raw = raw * _BASE + ((_TERM_TOP * (most - selected)) // (most - least) if most > least else 0)
            if passes:
                allowed.append(cls)
                raws.append(raw * _BASE ** (self.terms - len(chain)))
        return allowed, raws, rejecting

    def raw(self, live: list[int]) -> list[int]:
        """The raw scores of the live classes, without checks."""
        out: list[int] = []
        count, high, low = self.count, self.high, self.low
        for cls in live:
            raw = 0
            chain = self.chain[cls]
            for term, topology, parent in chain:
                raw = raw * _BASE + term_score(count[term][topology], high[term][parent], low[term][parent])
            out.append(raw * _BASE ** (self.terms - len(chain)))
        return out

    def add(self, cls: int) -> None:
        """A member of class `cls` was selected: it counts in its topology of every term it is in."""
        for term, topology, parent in self.chain[cls]:
            counts = self.count[term]
            counts[topology] += 1
            self.high[term][parent] = max(self.high[term][parent], counts[topology])
            if counts[topology] - 1 == self.low[term][parent]:
                self.low[term][parent] = min(counts[t] for t in self.siblings[term][parent])


class ManyCounts:
    """The counts as arrays, for many classes (say a topology per cluster): numpy over the classes per step."""

    def __init__(self, terms: tuple[SpreadTerm, ...], topologies: Topologies) -> None:
        self.topologies = topologies
        self.hard = [(index, term.max_skew) for index, term in enumerate(terms) if term.hard]
        self.count = [np.zeros(len(group), dtype=np.int64) for group in topologies.group]
        self.high = [np.zeros(groups, dtype=np.int64) for groups in topologies.groups]
        self.low = [np.zeros(groups, dtype=np.int64) for groups in topologies.groups]
        self.siblings = [
            [np.flatnonzero(group == g) for g in range(groups)]
            for group, groups in zip(topologies.group, topologies.groups, strict=True)
        ]

    def _look(self, term: int, classes: NDArray[np.intp]) -> tuple[NDArray[np.bool_], Scores, Scores, Scores]:
        """For each class: in the term, its topology's count, and its group's largest and smallest count."""
        topology = self.topologies.class_topology[term][classes]
        inside = topology >= 0
        topology = np.where(inside, topology, 0)
        group = self.topologies.group[term][topology]
        return inside, self.count[term][topology], self.high[term][group], self.low[term][group]

    def _raw(self, classes: NDArray[np.intp]) -> Scores:
        raw = np.zeros(len(classes), dtype=np.int64)
        for term in range(len(self.count)):
            raw = raw * _BASE + term_scores(*self._look(term, classes))
        return raw

    def check(self, live: list[int], weight: int) -> tuple[list[int], list[int], set[int]]:
        """As `FewCounts.check`."""
        classes = np.array(live, dtype=np.intp)
        allowed = np.ones(len(classes), dtype=np.bool_)
        rejecting: set[int] = set()
        for index, limit in self.hard:
            inside, count, _, low = self._look(index, classes)
            rejected = inside & (count + 1 - low > limit)
            if rejected.any():
                rejecting.add(index)
                allowed &= ~rejected
        kept = classes[allowed]
        raw = self._raw(kept) if weight else np.zeros(len(kept), dtype=np.int64)
        return kept.tolist(), raw.tolist(), rejecting

    def raw(self, live: list[int]) -> list[int]:
        """As `FewCounts.raw`."""
        raw: list[int] = self._raw(np.array(live, dtype=np.intp)).tolist()
        return raw

    def add(self, cls: int) -> None:
        """As `FewCounts.add`."""
        for term, topologies in enumerate(self.topologies.class_topology):
            topology = int(topologies[cls])
            if topology < 0:
                break
            count = self.count[term]
            count[topology] += 1
            group = int(self.topologies.group[term][topology])
            self.high[term][group] = max(int(self.high[term][group]), int(count[topology]))
            if count[topology] - 1 == self.low[term][group]:
                self.low[term][group] = count[self.siblings[term][group]].min()
