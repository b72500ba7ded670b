"""Topologies of one evaluation: which candidates share a topology of each term, and in which sibling group.

Terms are hierarchical: a topology of term i is a distinct tuple of values for terms 0..i, so two regions that
both have a zone `z1` hold two zone topologies, and a zone is compared only with the zones of its own region
(its sibling group). Only candidates form topologies: a cluster that was filtered out, or is not available,
counts nowhere.

Candidates that share their deepest topology are interchangeable for the spread (same counts, same score,
same skew checks), so the selection works on these classes rather than on clusters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Ids
from engine.cluster.fleet.views import InventoryView
from engine.cluster.pipeline.spread.terms import SpreadTerm

__all__ = ["Topologies", "build_topologies", "in_terms", "value_codes"]

Codes = NDArray[np.int64]


def value_codes(view: InventoryView, term: SpreadTerm) -> Codes:
    """Every cluster's value for the term as a code by fleet id, -1 for none; once per inventory version."""

    def build() -> Codes:
        fleet = view.fleet()
        codes = np.full(len(fleet), -1, dtype=np.int64)
        seen: dict[str, int] = {}
        position = fleet.position
        for cluster in view.inventory.clusters():
            name = cluster.metadata.name
            source = view.claims(name) if term.claim else cluster.metadata.labels
            value = source.get(term.key)
            if value is not None:
                codes[position[name]] = seen.setdefault(value, len(seen))
        codes.flags.writeable = False
        return codes

    return view.memo(("spread-values", term.claim, term.key), build)


def in_terms(view: InventoryView, terms: tuple[SpreadTerm, ...], candidates: Ids) -> NDArray[np.bool_]:
    """Which candidates have a value for every one of `terms`."""
    keep = np.ones(len(candidates), dtype=np.bool_)
    for term in terms:
        keep &= value_codes(view, term)[candidates] >= 0
    return keep


@dataclass(frozen=True, slots=True)
class Topologies:
    """The candidates' topologies, term by term, and their classes.

    `topology[i][c]`: candidate c's topology of term i, -1 when c is not in term i. `group[i][t]`: the sibling
    group of topology t of term i (the parent topology of term i - 1; 0 for term 0). `of_class[k]`: the class of
    each candidate; `class_topology[i][k]`: the topology of term i of class k's members.
    """

    topology: tuple[NDArray[np.intp], ...]
    group: tuple[NDArray[np.intp], ...]
    groups: tuple[int, ...]
    """How many sibling groups each term has."""
    of_class: NDArray[np.intp]
    class_topology: tuple[NDArray[np.intp], ...]


def build_topologies(view: InventoryView, terms: tuple[SpreadTerm, ...], candidates: Ids) -> Topologies:
    """Topology ids per term by their paths: each term pairs the parent topology with the cluster's value."""
    count = len(candidates)
    parent = np.zeros(count, dtype=np.intp)
    parents = 1
    inside = np.ones(count, dtype=np.bool_)
    topology: list[NDArray[np.intp]] = []
    group: list[NDArray[np.intp]] = []
    groups: list[int] = []
    # a candidate's class: (its deepest term, its topology there); -1 in no term at all
    depth_key = np.full(count, -1, dtype=np.int64)
    offset = 0
    for term in terms:
        codes = value_codes(view, term)[candidates]
        inside = inside & (codes >= 0)
        width = int(codes.max(initial=-1)) + 1
        pairs = parent[inside].astype(np.int64) * max(width, 1) + codes[inside]
        unique, inverse = np.unique(pairs, return_inverse=True)
        ids = np.full(count, -1, dtype=np.intp)
        ids[inside] = inverse.reshape(-1)
        topology.append(ids)
        group.append((unique // max(width, 1)).astype(np.intp))
        groups.append(parents)
        depth_key[inside] = offset + ids[inside]
        offset += len(unique)
        parent, parents = np.where(ids >= 0, ids, 0), len(unique)
    keys, first, of_class = np.unique(depth_key, return_index=True, return_inverse=True)
    class_topology = tuple(ids[first] for ids in topology)
    del keys
    return Topologies(tuple(topology), tuple(group), tuple(groups), of_class.reshape(-1), class_topology)
