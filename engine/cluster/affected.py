"""Which placements an inventory change can affect (spec L2–L4), answered from the indexes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from engine.cluster.compiled import CompiledPlacement
from engine.cluster.indexes import PlacementIndex
from engine.cluster.selectors import SelectorError, compile_label_selector, matches
from engine.cluster.views import CLUSTERSET_LABEL
from engine.inventory import Inventory, InventoryChange
from engine.inventory.store import TAINTS_KIND
from topics.inventory import ManagedCluster, ManagedClusterSetBinding

__all__ = ["ClusterVersion", "affected_placements", "predicates_could_pass", "sets_containing"]


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


def _same(memberships: Sequence[set[str]]) -> bool:
    return bool(memberships) and all(m == memberships[0] for m in memberships)


def _binding_namespaces(inventory: Inventory, sets: set[str]) -> set[str]:
    return {ns for (ns, name) in inventory.objects("ManagedClusterSetBinding") if name in sets}


def _sort_key(key: str) -> tuple[str, ...]:
    return tuple(key.split("/")[1:])


def _clusters(change: InventoryChange, inventory: Inventory) -> Iterable[ManagedCluster]:
    if change.key.kind == TAINTS_KIND:
        cluster = inventory.cluster(change.key.name)
        return [cluster] if cluster is not None else []
    return [obj for obj in (change.before, change.after) if isinstance(obj, ManagedCluster)]


def affected_placements(
    index: PlacementIndex,
    changes: Sequence[InventoryChange],
    inventory: Inventory,
    could_see: Callable[[str, Sequence[ClusterVersion]], bool] | None = None,
) -> list[str]:
    """Keys of the affected placements, in (namespace, name) order.

    `could_see(key, cluster_versions)` narrows a cluster or taint change that leaves set membership alone to the
    placements whose predicates may pass the cluster (None: every placement L2 names).
    """
    keys: set[str] = set()
    for change in changes:
        kind = change.key.kind
        if kind in ("ManagedCluster", TAINTS_KIND):
            clusters = list(_clusters(change, inventory))
            memberships = [sets_containing(cluster, inventory) for cluster in clusters]
            sets = set().union(*memberships)
            near = index.in_namespaces(_binding_namespaces(inventory, sets), sets)
            if could_see is not None and len(memberships) == len(clusters) and _same(memberships):
                # the cluster stayed in the same sets, so only placements whose predicates pass it (as it was or
                # is) or whose decision holds it can move; the rest would compute the same answer again
                versions = [(c.metadata.labels, {x.name: x.value for x in c.status.cluster_claims}) for c in clusters]
                near = {key for key in near if could_see(key, versions)}
            keys |= near
            keys |= index.by_cluster.get(change.key.name, set())
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
