"""In-memory inventory built from the cluster-status and taints topics (the global tables).

Effective taints of a cluster: the latest `cluster.taints.updated` set for it when one was received,
otherwise the ManagedCluster's own `spec.taints`. A taint without `timeAdded` is dated by the first event
that carried it (cluster spec D9), so tolerationSeconds can expire.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from topics.base import KubeObject
from topics.inventory import (
    AddOnPlacementScore,
    ClusterTaintsUpdated,
    Deployer,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Taint,
)

__all__ = ["TAINTS_KIND", "Inventory", "InventoryChange", "ObjectKey"]

TAINTS_KIND = "ClusterTaints"
"""The kind name an InventoryChange carries when a cluster's effective taints changed."""

_CLUSTER_SCOPED = frozenset({"ManagedCluster", "ManagedClusterSet"})


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """Identity of an inventory object: (kind, namespace, name); namespace is empty when cluster-scoped."""

    kind: str
    namespace: str
    name: str

    @classmethod
    def parse(cls, record_key: str) -> ObjectKey:
        """Read a cluster-status record key: `<Kind>/<name>` or `<Kind>/<namespace>/<name>`."""
        parts = record_key.split("/")
        if len(parts) == 2 and all(parts):
            return cls(parts[0], "", parts[1])
        if len(parts) == 3 and parts[0] and parts[2]:
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(f"record key {record_key!r} is not <Kind>/<name> or <Kind>/<namespace>/<name>")

    @classmethod
    def of(cls, obj: KubeObject) -> ObjectKey:
        """The identity of a parsed object."""
        meta = obj.metadata  # type: ignore[attr-defined]
        kind = str(obj.kind)  # type: ignore[attr-defined]
        namespace = "" if kind in _CLUSTER_SCOPED else str(meta.namespace)
        return cls(kind, namespace, str(meta.name))

    def record_key(self) -> str:
        """The record key this object is published under."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True, slots=True)
class InventoryChange:
    """One effective change; `before`/`after` are None for absent. Taint changes use kind TAINTS_KIND."""

    key: ObjectKey
    before: Any
    after: Any


_TaintId = tuple[str, str, str]


class Inventory:
    """Every inventory object by kind and (namespace, name); mutated only through `apply` and `delete`."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[tuple[str, str], KubeObject]] = {}
        self._taint_sets: dict[str, tuple[Taint, ...]] = {}
        self._first_seen: dict[str, dict[_TaintId, datetime]] = {}
        self._effective_taints: dict[str, tuple[Taint, ...]] = {}
        self.version = 0
        """Counts effective changes; lets engines cache derived views."""

    # --- reads -------------------------------------------------------------------------------------
    def objects(self, kind: str) -> Mapping[tuple[str, str], KubeObject]:
        """All objects of one kind, keyed by (namespace, name)."""
        return self._objects.get(kind, {})

    def get(self, key: ObjectKey) -> KubeObject | None:
        """One object, or None."""
        return self._objects.get(key.kind, {}).get((key.namespace, key.name))

    def clusters(self) -> Iterator[ManagedCluster]:
        """Every ManagedCluster."""
        for obj in self.objects("ManagedCluster").values():
            assert isinstance(obj, ManagedCluster)
            yield obj

    def cluster(self, name: str) -> ManagedCluster | None:
        """One ManagedCluster by name."""
        obj = self._objects.get("ManagedCluster", {}).get(("", name))
        return obj if isinstance(obj, ManagedCluster) else None

    def cluster_sets(self) -> Iterator[ManagedClusterSet]:
        """Every ManagedClusterSet."""
        for obj in self.objects("ManagedClusterSet").values():
            assert isinstance(obj, ManagedClusterSet)
            yield obj

    def cluster_set(self, name: str) -> ManagedClusterSet | None:
        """One ManagedClusterSet by name."""
        obj = self._objects.get("ManagedClusterSet", {}).get(("", name))
        return obj if isinstance(obj, ManagedClusterSet) else None

    def bindings(self, namespace: str) -> list[ManagedClusterSetBinding]:
        """The ManagedClusterSetBindings of one namespace, by name."""
        return [
            obj
            for (ns, _), obj in sorted(self.objects("ManagedClusterSetBinding").items())
            if ns == namespace and isinstance(obj, ManagedClusterSetBinding)
        ]

    def score(self, cluster: str, resource_name: str) -> AddOnPlacementScore | None:
        """The AddOnPlacementScore `resource_name` in the cluster's namespace."""
        obj = self._objects.get("AddOnPlacementScore", {}).get((cluster, resource_name))
        return obj if isinstance(obj, AddOnPlacementScore) else None

    def deployers(self) -> Iterator[Deployer]:
        """Every Deployer."""
        for obj in self.objects("Deployer").values():
            assert isinstance(obj, Deployer)
            yield obj

    def taints_of(self, cluster: str) -> tuple[Taint, ...]:
        """Effective taints of a cluster, each with `timeAdded` set (first-seen time when it was absent)."""
        return self._effective_taints.get(cluster, ())

    # --- writes ------------------------------------------------------------------------------------
    def apply(self, obj: KubeObject | ClusterTaintsUpdated, at: datetime) -> list[InventoryChange]:
        """Add or replace an object (or a cluster's taint set) seen at event time `at`."""
        if isinstance(obj, ClusterTaintsUpdated):
            return self._set_taints(obj.cluster, tuple(obj.taints), at)
        key = ObjectKey.of(obj)
        bucket = self._objects.setdefault(key.kind, {})
        before = bucket.get((key.namespace, key.name))
        if before == obj:
            return []
        bucket[(key.namespace, key.name)] = obj
        self.version += 1
        changes = [InventoryChange(key, before, obj)]
        if isinstance(obj, ManagedCluster):
            changes += self._refresh_taints(key.name, at)
        return changes

    def delete(self, key: ObjectKey, at: datetime) -> list[InventoryChange]:
        """Remove an object; a TAINTS_KIND key clears the cluster's taint set from the taints topic."""
        if key.kind == TAINTS_KIND:
            return self._set_taints(key.name, None, at)
        bucket = self._objects.get(key.kind, {})
        before = bucket.pop((key.namespace, key.name), None)
        if before is None:
            return []
        self.version += 1
        changes = [InventoryChange(key, before, None)]
        if key.kind == "ManagedCluster":
            changes += self._refresh_taints(key.name, at)
        return changes

    # --- taints ------------------------------------------------------------------------------------
    def _set_taints(self, cluster: str, taints: tuple[Taint, ...] | None, at: datetime) -> list[InventoryChange]:
        if taints is None:
            if self._taint_sets.pop(cluster, None) is None:
                return []
        else:
            self._taint_sets[cluster] = taints
        return self._refresh_taints(cluster, at)

    def _refresh_taints(self, cluster: str, at: datetime) -> list[InventoryChange]:
        raw = self._taint_sets.get(cluster)
        if raw is None:
            managed = self.cluster(cluster)
            raw = tuple(managed.spec.taints) if managed is not None else ()
        seen = self._first_seen.get(cluster, {})
        kept: dict[_TaintId, datetime] = {}
        resolved: list[Taint] = []
        for taint in raw:
            if taint.time_added is not None:
                resolved.append(taint)
                continue
            ident = (taint.key, taint.value, taint.effect)
            first = kept[ident] = seen.get(ident, at)
            resolved.append(taint.model_copy(update={"time_added": first}))
        if kept:
            self._first_seen[cluster] = kept
        else:
            self._first_seen.pop(cluster, None)
        before = self._effective_taints.get(cluster, ())
        after = tuple(resolved)
        if before == after:
            return []
        if after:
            self._effective_taints[cluster] = after
        else:
            self._effective_taints.pop(cluster, None)
        self.version += 1
        return [InventoryChange(ObjectKey(TAINTS_KIND, "", cluster), before, after)]
