"""Derived views of the inventory, cached per `inventory.version`.

Thousands of placements read the same clusters in one batch: set membership, selector results, CEL inputs,
CEL results and resource quantities are computed once per inventory version and shared.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

import numpy as np
import orjson
from celpy.adapter import json_to_cel
from celpy.evaluation import Activation
from numpy.typing import NDArray

from engine.cluster.fleet.ids import Fleet, Ids
from engine.cluster.matching.cel_env import CelOutcome, CelProgram, make_functions
from engine.cluster.matching.selectors import Selector, SelectorError, compile_label_selector, matches
from engine.errors import EngineError
from engine.inventory import Inventory
from topics.inventory import ManagedCluster, ManagedClusterSet
from topics.quantity import parse_quantity

__all__ = ["CLUSTERSET_LABEL", "EvaluationError", "InventoryView"]

_T = TypeVar("_T")

CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
_EXCLUSIVE = ("", "ExclusiveClusterSetLabel")


class EvaluationError(EngineError):
    """The evaluation cannot run (e.g. an unknown set selectorType): nothing is published (spec C3)."""


_MAPS = frozenset({"labels", "annotations", "allocatable", "capacity"})
"""Fields that are Go maps: omitempty drops an empty map, never one of its entries (a label `gpu: ""` stays)."""


def _prune(value: Any, entries: bool = False) -> Any:
    """Drop what Go's omitempty would drop: nulls, empty strings, empty maps and empty lists among a struct's
    fields; `entries` says `value` is a map, whose entries are kept whatever their value."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            pruned = _prune(item, key in _MAPS and not entries)
            if not entries and (pruned is None or (not pruned and isinstance(pruned, str | dict | list))):
                continue
            out[key] = pruned
        return out
    if isinstance(value, list):
        return [_prune(item) for item in value]
    return value


def cluster_document(cluster: ManagedCluster) -> dict[str, Any]:
    """The ManagedCluster as the API serves it (spec C13): camelCase, omitempty fields absent, quantities as text."""
    raw = cluster.model_dump(mode="json", by_alias=True, exclude_none=True)
    metadata = raw.get("metadata", {})
    if metadata.get("generation") == 0:
        metadata.pop("generation")
    status = raw.get("status", {})
    for field in ("allocatable", "capacity"):
        if field in status:
            status[field] = {k: str(v) for k, v in status[field].items()}
    pruned: dict[str, Any] = _prune(raw)
    pruned.setdefault("metadata", {})["name"] = cluster.metadata.name
    return pruned


_CEL_VALUES_KEPT = 100_000
"""Outcomes by path values are kept across versions until there are this many (then started afresh)."""


def _seen_at(document: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> list[Any]:
    """What an expression reading `paths` can see of a document: per path the value, or where the walk stopped
    and why (a missing key, or a value that is not a map, in full): CEL tells those apart, as `has()` on a
    missing map is an error and on a missing key false."""
    seen: list[Any] = []
    for path in paths:
        current: Any = document
        for depth, field in enumerate(path):
            if not isinstance(current, dict):
                current = ("not a map", depth, current)
                break
            if field not in current:
                current = ("missing", depth)
                break
            current = current[field]
        else:
            current = ("value", current)
        seen.append(current)
    return seen


def _visible_part(paths: tuple[tuple[str, ...], ...], seen: list[Any]) -> dict[str, Any]:
    """The least document in which `paths` show what `seen` (their `_seen_at`) says: the maps along each path
    with only the keys walked, and in full what a walk ended on. An expression reading only those paths has the
    same outcome on it as on the whole document, and converting it to CEL costs a fifth as much. No path extends
    another (`CompiledExpression.reads`), so nothing is written into a map taken from the document."""
    out: dict[str, Any] = {}
    for path, outcome in zip(paths, seen, strict=True):
        if outcome[0] == "missing":  # the map at path[:depth] lacks the next key: only that map is shown
            maps, end, value = path[: outcome[1]], None, None
        elif outcome[0] == "value":
            maps, end, value = path[:-1], path[-1], outcome[1]
        else:  # "not a map": the walk met a value that is not a map at path[:depth]
            maps, end, value = path[: outcome[1] - 1], path[outcome[1] - 1], outcome[2]
        target = out
        for field in maps:
            target = target.setdefault(field, {})
        if end is not None:
            target[end] = value
    return out


class InventoryView:
    """Read-through caches over one inventory; everything is dropped when the version moves."""

    def __init__(self, inventory: Inventory, previous: InventoryView | None = None) -> None:
        self.inventory = inventory
        self.version = inventory.version
        kept = previous if previous is not None and previous.inventory is inventory else None
        self._cel_by_object: dict[tuple[str, str], tuple[ManagedCluster, CelOutcome]] = (
            kept._cel_by_object if kept is not None else {}
        )
        self._cel_by_values: dict[tuple[str, bytes], CelOutcome] = (
            kept._cel_by_values if kept is not None and len(kept._cel_by_values) < _CEL_VALUES_KEPT else {}
        )
        self._documents: dict[str, dict[str, Any]] = {}
        self._members: dict[str, frozenset[str]] = {}
        self._selected: dict[tuple[str, Selector], frozenset[str]] = {}
        self._claims: dict[str, dict[str, str]] = {}
        self._cel_docs: dict[str, Any] = {}
        self._cel_results: dict[tuple[str, str], CelOutcome] = {}
        self._allocatable: dict[str, dict[str, float]] = {}
        self._terminating: frozenset[str] | None = None
        self._tainted: frozenset[str] | None = None
        self._if_new: frozenset[str] | None = None
        self._activation: Activation | None = None
        self._bound: dict[str, tuple[str, ...]] | None = None
        self._available: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._available_ids: dict[tuple[str, ...], Ids] = {}
        self._names: frozenset[str] | None = None
        self._fleet: Fleet | None = None
        self._earlier_fleet: Fleet | None = (
            (previous._fleet or previous._earlier_fleet) if previous is not None else None
        )
        self._allocatable_values: dict[str, NDArray[np.float64]] = {}
        self._memo: dict[Hashable, Any] = {}

    def fresh(self) -> bool:
        """Still valid for the inventory's current version."""
        return self.version == self.inventory.version

    def memo(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """`build()` once per view and key: for plugins whose answer depends only on this inventory version and
        a few placement inputs many placements share (the key must name the plugin and those inputs)."""
        if key in self._memo:
            value: _T = self._memo[key]
            return value
        value = self._memo[key] = build()
        return value

    # --- sets ------------------------------------------------------------------------------------
    def bound_sets(self, namespace: str) -> tuple[str, ...]:
        """Names of the valid bindings of a namespace: bindings named after an existing set (spec C1)."""
        if self._bound is None:
            bound: dict[str, set[str]] = {}
            for (ns, name), _binding in self.inventory.objects("ManagedClusterSetBinding").items():
                if self.inventory.cluster_set(name) is not None:
                    bound.setdefault(ns, set()).add(name)
            self._bound = {ns: tuple(sorted(names)) for ns, names in bound.items()}
        return self._bound.get(namespace, ())

    def available(self, eligible: tuple[str, ...]) -> tuple[str, ...]:
        """The union of the sets' members without terminating clusters, by name (spec C4)."""
        cached = self._available.get(eligible)
        if cached is None:
            members: set[str] = set()
            for name in eligible:
                cluster_set = self.inventory.cluster_set(name)
                if cluster_set is not None:
                    members |= self.set_members(cluster_set)
            cached = tuple(sorted(members - self.terminating()))
            self._available[eligible] = cached
        return cached

    def available_ids(self, eligible: tuple[str, ...]) -> Ids:
        """`available(eligible)` as fleet ids (ascending, so still in name order)."""
        cached = self._available_ids.get(eligible)
        if cached is None:
            cached = self._available_ids[eligible] = self.fleet().ids(self.available(eligible))
        return cached

    def set_members(self, cluster_set: ManagedClusterSet) -> frozenset[str]:
        """Cluster names of one set (spec C3); raises EvaluationError for an unknown selectorType."""
        name = cluster_set.metadata.name
        cached = self._members.get(name)
        if cached is not None:
            return cached
        selector = cluster_set.spec.cluster_selector
        if selector.selector_type in _EXCLUSIVE:
            members = frozenset(
                c.metadata.name for c in self.inventory.clusters() if c.metadata.labels.get(CLUSTERSET_LABEL) == name
            )
        elif selector.selector_type == "LabelSelector":
            if selector.label_selector is None:
                members = frozenset()
            else:
                try:
                    compiled = compile_label_selector(selector.label_selector)
                except SelectorError as exc:
                    raise EvaluationError(f"ManagedClusterSet {name}: {exc}") from exc
                members = self.selected("label", compiled)
        else:
            raise EvaluationError(f"ManagedClusterSet {name}: selectorType {selector.selector_type!r} is not supported")
        self._members[name] = members
        return members

    def terminating(self) -> frozenset[str]:
        """Clusters with a deletionTimestamp (spec C4)."""
        if self._terminating is None:
            self._terminating = frozenset(
                c.metadata.name for c in self.inventory.clusters() if c.metadata.deletion_timestamp is not None
            )
        return self._terminating

    def tainted(self) -> frozenset[str]:
        """Clusters that have at least one effective taint."""
        if self._tainted is None:
            inventory = self.inventory
            self._tainted = frozenset(
                c.metadata.name for c in inventory.clusters() if inventory.taints_of(c.metadata.name)
            )
        return self._tainted

    def no_select_if_new(self) -> frozenset[str]:
        """Clusters with a NoSelectIfNew taint (their filtering depends on the current decisions)."""
        if self._if_new is None:
            taints_of = self.inventory.taints_of
            self._if_new = frozenset(
                name for name in self.tainted() if any(t.effect == "NoSelectIfNew" for t in taints_of(name))
            )
        return self._if_new

    # --- selectors -------------------------------------------------------------------------------
    def claims(self, name: str) -> Mapping[str, str]:
        """`status.clusterClaims` as a map; the last duplicate wins (spec C9)."""
        cached = self._claims.get(name)
        if cached is None:
            cluster = self.inventory.cluster(name)
            cached = {} if cluster is None else {c.name: c.value for c in cluster.status.cluster_claims}
            self._claims[name] = cached
        return cached

    def selected(self, source: str, selector: Selector) -> frozenset[str]:
        """Every cluster whose labels (`label`) or claims (`claim`) match the selector."""
        key = (source, selector)
        cached = self._selected.get(key)
        if cached is None:
            if source == "label":
                cached = frozenset(
                    c.metadata.name for c in self.inventory.clusters() if matches(selector, c.metadata.labels)
                )
            else:
                cached = frozenset(
                    c.metadata.name
                    for c in self.inventory.clusters()
                    if matches(selector, self.claims(c.metadata.name))
                )
            self._selected[key] = cached
        return cached

    def names(self) -> frozenset[str]:
        """Every cluster's name."""
        if self._names is None:
            self._names = frozenset(c.metadata.name for c in self.inventory.clusters())
        return self._names

    def fleet(self) -> Fleet:
        """The ids of this version's clusters: the previous view's while the names are the same."""
        if self._fleet is None:
            earlier = self._earlier_fleet
            names = self.names()
            self._fleet = earlier if earlier is not None and earlier.position.keys() == names else Fleet(names)
            self._earlier_fleet = None
        return self._fleet

    # --- CEL -------------------------------------------------------------------------------------
    def document(self, name: str) -> dict[str, Any]:
        """A cluster's API document (empty for an unknown cluster)."""
        doc = self._documents.get(name)
        if doc is None:
            cluster = self.inventory.cluster(name)
            doc = self._documents[name] = cluster_document(cluster) if cluster is not None else {}
        return doc

    def cel_document(self, name: str) -> Any:
        """The `managedCluster` CEL value of a cluster."""
        doc = self._cel_docs.get(name)
        if doc is None:
            doc = self._cel_docs[name] = json_to_cel(self.document(name))
        return doc

    def cel_activation(self) -> Activation:
        """The CEL activation (functions incl. `scores()` bound to this inventory), built once per view."""
        if self._activation is None:
            self._activation = Activation(functions=make_functions(self.inventory))
        return self._activation

    def cel_matches(
        self, key: tuple[str, str], pure: bool, program: CelProgram, reads: tuple[tuple[str, ...], ...] | None = None
    ) -> bool:
        """Whether a selector's expressions match a cluster (see `cel_outcome`)."""
        return self.cel_outcome(key, pure, program, reads).matched

    def cel_outcome(
        self, key: tuple[str, str], pure: bool, program: CelProgram, reads: tuple[tuple[str, ...], ...] | None = None
    ) -> CelOutcome:
        """The outcome of a selector's expressions (`key`: their text, cluster name), evaluated once.

        `scores()`-free (`pure`) outcomes are kept against the cluster object they were computed on, across
        inventory versions, so one changed cluster or taint does not re-run every expression on every cluster;
        the others depend on scores too and are kept for this version only. With fixed read paths (`reads`),
        an outcome also serves every cluster with the same values there (a fleet has few distinct labels). An
        outcome keeps its cost, so a cached one is charged to a placement's budget as an evaluation would be."""
        name = key[1]
        if not pure:
            cached = self._cel_results.get(key)
            if cached is None:
                program.matches(self.cel_document(name))
                cached = self._cel_results[key] = program.last
            return cached
        cluster = self.inventory.cluster(name)
        entry = self._cel_by_object.get(key)
        if entry is not None and entry[0] is cluster:
            return entry[1]
        if reads is None or cluster is None:
            program.matches(self.cel_document(name))
            result = program.last
        else:
            seen = _seen_at(self.document(name), reads)
            values = (key[0], orjson.dumps(seen))
            found = self._cel_by_values.get(values)
            if found is None:  # evaluated on what it reads, not on the whole cluster
                program.matches(json_to_cel(_visible_part(reads, seen)))
                found = self._cel_by_values[values] = program.last
            result = found
        if cluster is not None:
            self._cel_by_object[key] = (cluster, result)
        return result

    # --- resources -------------------------------------------------------------------------------
    def allocatable_of(self, resource: str) -> Mapping[str, float]:
        """Allocatable `resource` as a double by cluster name, for the clusters that also report its capacity
        (spec F4); built once per view and resource."""
        cached = self._allocatable.get(resource)
        if cached is None:
            cached = {}
            for cluster in self.inventory.clusters():
                status = cluster.status
                raw = status.allocatable.get(resource)
                if raw is not None and resource in status.capacity:
                    value = parse_quantity(raw)
                    if value is not None:
                        cached[cluster.metadata.name] = value
            self._allocatable[resource] = cached
        return cached

    def allocatable_values(self, resource: str) -> NDArray[np.float64]:
        """`allocatable_of(resource)` over the fleet's ids, NaN for clusters without a value."""
        cached = self._allocatable_values.get(resource)
        if cached is None:
            cached = self._allocatable_values[resource] = self.fleet().values(self.allocatable_of(resource))
        return cached
