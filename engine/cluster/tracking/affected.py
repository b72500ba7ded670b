"""Which placements an inventory change can affect (spec L2–L4), answered from the indexes.

A cluster or taint change that keeps the cluster in the same sets is narrowed further, placement by placement:
only the inputs the pipeline reads from one cluster matter (its labels and claims for predicates and groups,
its taints for the taint filter, allocatable and capacity for the resource prioritizers, the deletion mark
for availability, the values of its spread topology keys, and anything for CEL). A placement for which the
cluster passes the filters before and after, with the same scoring inputs and the same topologies, computes the
same answer and is not re-decided, even if it holds it. Spread makes every candidate matter to the others: a
candidate that moves to another topology, or joins or leaves the topologies, can move any pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from engine.cluster.fleet.views import CLUSTERSET_LABEL, InventoryView
from engine.cluster.matching.selectors import SelectorError, compile_label_selector, matches
from engine.cluster.pipeline.compiled import CompiledPlacement
from engine.cluster.pipeline.framework import ValueRange
from engine.cluster.pipeline.plugins.taint_toleration import taint_outcome
from engine.cluster.pipeline.spread.terms import has_terms
from engine.cluster.pipeline.weights import plan_prioritizers, spread_weight
from engine.cluster.tracking.indexes import PlacementIndex
from engine.inventory import Inventory, InventoryChange
from engine.inventory.store import TAINTS_KIND
from topics.inventory import ManagedCluster, ManagedClusterSetBinding, Taint
from topics.placement import Placement, PlacementSpec

__all__ = [
    "ClusterDelta",
    "ClusterVersion",
    "affected_placements",
    "answer_may_change",
    "leaving_moves_others",
    "predicates_could_pass",
    "sets_containing",
]


def sets_containing(cluster: ManagedCluster, inventory: Inventory) -> set[str]:
    """Set names whose membership includes the cluster (exclusive label, or a matching LabelSelector set)."""
    found: set[str] = set()
    label = cluster.metadata.labels.get(CLUSTERSET_LABEL)
    if label:
        found.add(label)
    for cluster_set in inventory.cluster_sets():
        selector = cluster_set.spec.cluster_selector
        if selector.selector_type != "LabelSelector" or selector.label_selector is None:
            continue
        try:
            if matches(compile_label_selector(selector.label_selector), cluster.metadata.labels):
                found.add(cluster_set.metadata.name)
        except SelectorError:
            continue
    return found


ClusterVersion = tuple[Mapping[str, str], Mapping[str, str]]
"""Labels and claims of a cluster as it was or is, built once per change."""


def predicates_could_pass(compiled: CompiledPlacement, versions: Sequence[ClusterVersion]) -> bool:
    """Whether a predicate may keep one of these cluster versions; CEL and compile errors count as yes."""
    if compiled.predicate_error is not None or not compiled.predicates:
        return True
    for selector in compiled.predicates:
        if selector.cel:
            return True
        for labels, claims in versions:
            if matches(selector.labels, labels) and matches(selector.claims, claims):
                return True
    return False


@dataclass(frozen=True, slots=True)
class ClusterDelta:
    """One cluster's change that kept its set membership, as far as a placement's answer can tell."""

    name: str
    before: ClusterVersion
    after: ClusterVersion
    scoring_changed: bool
    """Allocatable, capacity, deletion mark or spec taints changed (read by prioritizers and availability)."""
    taints: tuple[Sequence[Taint], Sequence[Taint]] | None = None
    """Effective taints before and after, for a taint change."""


def answer_may_change(
    spec: PlacementSpec, compiled: CompiledPlacement, delta: ClusterDelta, *, holds: bool, now: datetime
) -> bool | None:
    """Whether re-deciding a placement with this spec after `delta` could give another answer; `holds`: it decided
    the cluster. None: only if the cluster leaving the candidates (it does not hold) moves the others' scores or the
    status (`leaving_moves_others`). A function of the spec, so placements repeating a spec share the answer."""
    versions = (delta.before, delta.after)
    if delta.scoring_changed:
        return holds or predicates_could_pass(compiled, versions)
    whole_cluster = compiled.predicate_error is not None or any(selector.cel for selector in compiled.predicates)
    if whole_cluster and delta.taints is None:
        # CEL reads the whole ManagedCluster; a broken predicate is re-reported either way. A taint change
        # leaves the ManagedCluster, and so the CEL answer, as it was: the taint filter decides below.
        return True
    if delta.before != delta.after and (compiled.groups or compiled.group_error is not None):
        return holds or predicates_could_pass(compiled, versions)  # group selectors read labels and claims
    was = predicates_could_pass(compiled, (delta.before,))
    passed = (was, was if delta.after is delta.before else predicates_could_pass(compiled, (delta.after,)))
    if delta.taints is not None:  # labels and claims are the same on both sides, and so is the predicate answer
        tolerations = spec.tolerations
        before = taint_outcome(delta.taints[0], tolerations, now, held=holds)
        after = taint_outcome(delta.taints[1], tolerations, now, held=holds)
        if passed[0] and (before[1] or after[1]):
            return True  # a toleration runs out: the placement's timer moves
        passed = (passed[0] and before[0], passed[1] and after[0])
    spread = compiled.spread
    terms = spread.read(spread_weight(plan_prioritizers(spec.prioritizer_policy, spread.declared)))
    if terms:  # the cluster's topology path, as far as the spread reads it
        paths = (spread.path(*delta.before, terms), spread.path(*delta.after, terms))
        depth = spread.hard_depth
        passed = (passed[0] and len(paths[0]) > depth, passed[1] and len(paths[1]) > depth)
        if passed[0] and passed[1] and paths[0] != paths[1]:
            return True  # a candidate moved to another topology: the counts of every pick change
        if passed[0] != passed[1]:
            return True  # a candidate forms a topology, or stops forming one
    if passed[0] == passed[1]:
        return holds and not passed[0]  # passing on both sides with the same inputs; a stale holder must let go
    # the cluster starts or stops being a candidate: it may be selected, or it leaves a decision, or its
    # departure moves the others' scores or the status
    return True if holds or passed[1] else None


def leaving_moves_others(
    placement: Placement, view: InventoryView, now: datetime, cluster: str, ranges: Mapping[str, ValueRange] | None
) -> bool:
    """Whether `cluster` leaving the candidates can change the answer of a placement that does not hold it:
    asked of every enabled prioritizer (`ranges`: from the placement's last evaluation)."""
    planned, status = plan_prioritizers(placement.spec.prioritizer_policy, has_terms(placement.spec.spread_policy))
    if status.failed:
        return True
    return any(entry.prioritizer.leaving_matters(view, now, cluster, ranges) for entry in planned)


def _cluster_delta(change: InventoryChange, clusters: Sequence[ManagedCluster]) -> ClusterDelta | None:
    """The delta of a cluster or taint change (`clusters`: as `_clusters` finds them, not empty); None for a
    cluster added or deleted."""
    if change.key.kind == TAINTS_KIND:
        version = _version(clusters[0])
        return ClusterDelta(change.key.name, version, version, False, (change.before or (), change.after or ()))
    if len(clusters) != 2:
        return None
    before, after = clusters
    scoring_changed = (
        before.status.allocatable != after.status.allocatable
        or before.status.capacity != after.status.capacity
        or before.metadata.deletion_timestamp != after.metadata.deletion_timestamp
        or before.spec.taints != after.spec.taints
    )
    return ClusterDelta(change.key.name, _version(before), _version(after), scoring_changed)


def _version(cluster: ManagedCluster) -> ClusterVersion:
    return cluster.metadata.labels, {claim.name: claim.value for claim in cluster.status.cluster_claims}


def _same(memberships: Sequence[set[str]]) -> bool:
    return bool(memberships) and all(m == memberships[0] for m in memberships)


def _binding_namespaces(inventory: Inventory, sets: set[str]) -> set[str]:
    return {ns for (ns, name) in inventory.objects("ManagedClusterSetBinding") if name in sets}


def _sort_key(key: str) -> tuple[str, ...]:
    return tuple(key.split("/")[1:])


def _clusters(change: InventoryChange, inventory: Inventory) -> list[ManagedCluster]:
    if change.key.kind == TAINTS_KIND:
        cluster = inventory.cluster(change.key.name)
        return [cluster] if cluster is not None else []
    return [obj for obj in (change.before, change.after) if isinstance(obj, ManagedCluster)]


def affected_placements(
    index: PlacementIndex,
    changes: Sequence[InventoryChange],
    inventory: Inventory,
    may_change: Callable[[str, ClusterDelta], bool] | None = None,
) -> list[str]:
    """Keys of the affected placements, in (namespace, name) order.

    `may_change(key, delta)` narrows a cluster or taint change that leaves set membership alone (None: every
    placement L2 names, and every placement holding the cluster).
    """
    keys: set[str] = set()
    holding = index.holding({c.key.name for c in changes if c.key.kind in ("ManagedCluster", TAINTS_KIND)})
    for change in changes:
        kind = change.key.kind
        if kind in ("ManagedCluster", TAINTS_KIND):
            clusters = _clusters(change, inventory)
            memberships = [sets_containing(cluster, inventory) for cluster in clusters]
            sets = set().union(*memberships)
            near = index.in_namespaces(_binding_namespaces(inventory, sets), sets)
            near |= holding[change.key.name]
            delta = _cluster_delta(change, clusters) if _same(memberships) else None
            if may_change is not None and delta is not None:
                near = {key for key in near if may_change(key, delta)}
            keys |= near
        elif kind == "ManagedClusterSet":
            sets = {change.key.name}
            keys |= index.in_namespaces(_binding_namespaces(inventory, sets), sets)
        elif kind == "ManagedClusterSetBinding":
            sets = {change.key.name}
            for obj in (change.before, change.after):
                if isinstance(obj, ManagedClusterSetBinding):
                    sets.add(obj.spec.cluster_set)
            keys |= index.in_namespaces({change.key.namespace}, sets)
        elif kind == "AddOnPlacementScore":
            users = index.by_score.get(change.key.name, set()) | index.any_score
            if not users:
                continue
            scored = inventory.cluster(change.key.namespace)
            if scored is None:
                continue
            sets = sets_containing(scored, inventory)
            near = index.in_namespaces(_binding_namespaces(inventory, sets), sets)
            keys |= users & near
    return sorted(keys, key=_sort_key)
