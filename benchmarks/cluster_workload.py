"""The cluster placement benchmark's workload: a deterministic fleet and placements that use every feature.

Exclusive and label-selector sets, bindings per namespace, taints of every effect, label/claim/CEL
predicates, numberOfClusters, resource prioritizers, tolerations and decision groups; optionally topology
labels (3 regions x 3 zones) and a fifth of the placements spread over them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from topics.names import TopicRole

__all__ = ["Item", "Workload", "event"]

CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
EXCLUSIVE_SETS = ("set-a", "set-b", "set-c", "set-d")
GPU_SET = "gpu"  # a LabelSelector set: every cluster labelled gpu=true, whatever its exclusive set
REGIONS = ("us-east", "us-west", "eu-west", "eu-central", "ap-south", "ap-east")
ENVS = ("prod", "prod", "staging", "dev")
PLATFORMS = ("AWS", "GCP", "Azure", "OpenStack")
TOPOLOGY_REGION = "topology.kubernetes.io/region"
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
TOPOLOGY_REGIONS = ("north", "centre", "south")
TOPOLOGY_ZONES = ("a", "b", "c")
CEL_POOL = (
    'managedCluster.metadata.labels["tier"] == "gold"',
    'managedCluster.status.clusterClaims.exists(c, c.name == "kubeversion.open-cluster-management.io"'
    ' && semver(c.value).isGreaterThan(semver("1.28.0")))',
    "int(managedCluster.status.allocatable.cpu) >= 32",
    'managedCluster.metadata.name.startsWith("cluster-00") || managedCluster.metadata.labels.env == "staging"',
)

Item = tuple[TopicRole, str, dict[str, Any]]


def event(kind: str, data: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": uuid.uuid4().hex,
        "source": "/benchmarks/cluster_placement",
        "type": f"{kind}.v1",
        "time": at.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": data,
    }


@dataclass
class Workload:
    """A deterministic, realistic mix: exclusive and label-selector sets, bindings per namespace, taints,
    label/claim/CEL predicates, numberOfClusters, resource prioritizers, tolerations and decision groups."""

    placements: int
    clusters: int
    namespaces: int
    now: datetime
    seed: int = 7
    topology: bool = False
    """Clusters carry topology region and zone labels (3 x 3, by index), and a label change also moves the zone."""
    spread: bool = False
    """Every fifth placement spreads over the topology labels (which `spread` turns on as well)."""
    cel_heavy: bool = False
    """Placements that would select by labels or claims select by a CEL expression of the pool instead (65 % of
    them use CEL, against 5 % in the default mix)."""
    cluster_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    cluster_status: dict[str, dict[str, Any]] = field(default_factory=dict)
    _bound: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def cluster_name(self, i: int) -> str:
        return f"cluster-{i:04d}"

    def clusterevent(self, name: str, labels: dict[str, str], rng: random.Random) -> dict[str, Any]:
        status = self.cluster_status.get(name)
        if status is None:
            status = self.cluster_status[name] = self._status(rng)
        return event(
            "managedcluster.applied", {"metadata": {"name": name, "labels": labels}, "status": status}, self.now
        )

    @staticmethod
    def _status(rng: random.Random) -> dict[str, Any]:
        cpu = rng.choice((4, 8, 16, 32, 64))
        memory = cpu * rng.choice((2, 4, 8))
        return {
            "allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi"},
            "capacity": {"cpu": str(cpu * 2), "memory": f"{memory * 2}Gi"},
            "clusterClaims": [
                {"name": "platform.open-cluster-management.io", "value": rng.choice(PLATFORMS)},
                {
                    "name": "kubeversion.open-cluster-management.io",
                    "value": f"1.{rng.randint(26, 31)}.{rng.randint(0, 9)}",
                },
            ],
        }

    def inventory(self) -> Iterator[Item]:
        """Cluster sets, bindings, clusters and taint sets, in a producible order."""
        rng = random.Random(self.seed)
        for name in EXCLUSIVE_SETS:
            yield (
                TopicRole.CLUSTER_STATUS,
                f"ManagedClusterSet/{name}",
                event("managedclusterset.applied", {"metadata": {"name": name}}, self.now),
            )
        gpu = {"selectorType": "LabelSelector", "labelSelector": {"matchLabels": {"gpu": "true"}}}
        yield (
            TopicRole.CLUSTER_STATUS,
            f"ManagedClusterSet/{GPU_SET}",
            event(
                "managedclusterset.applied", {"metadata": {"name": GPU_SET}, "spec": {"clusterSelector": gpu}}, self.now
            ),
        )
        for n in range(self.namespaces):
            for cluster_set in self.bound_sets(n):
                data = {
                    "metadata": {"name": cluster_set, "namespace": f"ns-{n:02d}"},
                    "spec": {"clusterSet": cluster_set},
                }
                yield (
                    TopicRole.CLUSTER_STATUS,
                    f"ManagedClusterSetBinding/ns-{n:02d}/{cluster_set}",
                    event("managedclustersetbinding.applied", data, self.now),
                )
        added = (self.now - timedelta(seconds=60)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        for i in range(self.clusters):
            name = self.cluster_name(i)
            labels = {
                CLUSTERSET_LABEL: EXCLUSIVE_SETS[i % len(EXCLUSIVE_SETS)],
                "region": rng.choice(REGIONS),
                "env": rng.choice(ENVS),
                "tier": rng.choice(("gold", "silver", "bronze")),
            }
            if rng.random() < 0.1:
                labels["gpu"] = "true"
            if self.topology or self.spread:  # by index, not from rng: the rest of the workload stays the same
                region = TOPOLOGY_REGIONS[i % len(TOPOLOGY_REGIONS)]
                labels[TOPOLOGY_REGION] = region
                labels[TOPOLOGY_ZONE] = f"{region}-{TOPOLOGY_ZONES[(i // len(TOPOLOGY_REGIONS)) % len(TOPOLOGY_ZONES)]}"
            self.cluster_labels[name] = labels
            yield TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", self.clusterevent(name, labels, rng)
            roll = rng.random()
            effect = (
                "NoSelect"
                if roll < 0.04
                else "PreferNoSelect"
                if roll < 0.07
                else "NoSelectIfNew"
                if roll < 0.09
                else None
            )
            if effect is not None:
                key = {"NoSelect": "maintenance", "PreferNoSelect": "degraded", "NoSelectIfNew": "draining"}[effect]
                taint = {"key": key, "value": "", "effect": effect, "timeAdded": added}
                yield (
                    TopicRole.TAINTS,
                    name,
                    event("cluster.taints.updated", {"cluster": name, "taints": [taint]}, self.now),
                )

    def bound_sets(self, n: int) -> tuple[str, ...]:
        """The sets namespace `n` binds; kept, as seeding a generator per placement dominated making 100,000."""
        sets = self._bound.get(n)
        if sets is None:
            rng = random.Random(self.seed * 1000 + n)
            chosen = rng.sample(EXCLUSIVE_SETS, rng.randint(1, 2))
            if rng.random() < 0.3:
                chosen.append(GPU_SET)
            sets = self._bound[n] = tuple(chosen)
        return sets

    def placement_items(self) -> Iterator[Item]:
        rng = random.Random(self.seed + 1)
        for i in range(self.placements):
            n = i % self.namespaces
            namespace, name = f"ns-{n:02d}", f"p-{i:05d}"
            spec: dict[str, Any] = {}
            bucket = i % 20
            if bucket < 8:
                if rng.random() < 0.5:
                    selector: dict[str, Any] = {"matchLabels": {"region": rng.choice(REGIONS)}}
                else:
                    selector = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}
                spec["predicates"] = [{"requiredClusterSelector": {"labelSelector": selector}}]
            elif bucket < 12:
                platforms = rng.sample(PLATFORMS, 2)
                claim = {
                    "matchExpressions": [
                        {"key": "platform.open-cluster-management.io", "operator": "In", "values": platforms}
                    ]
                }
                spec["predicates"] = [{"requiredClusterSelector": {"claimSelector": claim}}]
            elif bucket == 12:
                spec["predicates"] = [
                    {"requiredClusterSelector": {"celSelector": {"celExpressions": [rng.choice(CEL_POOL)]}}}
                ]
            if self.cel_heavy and bucket <= 12:
                spec["predicates"] = [
                    {"requiredClusterSelector": {"celSelector": {"celExpressions": [rng.choice(CEL_POOL)]}}}
                ]
            if rng.random() < 0.6:
                spec["numberOfClusters"] = rng.randint(1, 5)
            if rng.random() < 0.3:
                spec["clusterSets"] = [rng.choice(self.bound_sets(n))]
            roll = rng.random()
            if roll < 0.25:
                spec["prioritizerPolicy"] = {
                    "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2}]
                }
            elif roll < 0.35:
                spec["prioritizerPolicy"] = {
                    "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}]
                }
            elif roll < 0.40:
                spec["prioritizerPolicy"] = {
                    "mode": "Exact",
                    "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}}],
                }
            if rng.random() < 0.2:
                toleration: dict[str, Any] = {"key": "maintenance", "operator": "Exists", "effect": "NoSelect"}
                if rng.random() < 0.5:
                    toleration["tolerationSeconds"] = 3600
                spec["tolerations"] = [toleration]
            if rng.random() < 0.1:
                spec["decisionStrategy"] = {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}
            if self.spread and i % 5 == 0:
                spec["spreadPolicy"] = self._spread_policy(i)
            data = {"metadata": {"name": name, "namespace": namespace, "generation": 1}, "spec": spec}
            yield TopicRole.SUBMISSIONS, f"Placement/{namespace}/{name}", event("placement.applied", data, self.now)

    @staticmethod
    def _spread_policy(i: int) -> dict[str, Any]:
        """Region then zone; every other spreading placement holds its zones within one of each other."""
        zone: dict[str, Any] = {"topologyKey": TOPOLOGY_ZONE, "topologyKeyType": "Label"}
        if (i // 5) % 2 == 0:
            zone |= {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
        return {"spreadConstraints": [{"topologyKey": TOPOLOGY_REGION, "topologyKeyType": "Label"}, zone]}

    def relabelled(self, name: str) -> Item:
        """The cluster with another region label, and with topology labels another zone of its topology region
        (same status as before apart from labels)."""
        labels = dict(self.cluster_labels[name])
        labels["region"] = REGIONS[(REGIONS.index(labels["region"]) + 1) % len(REGIONS)]
        if TOPOLOGY_ZONE in labels:
            region, zone = labels[TOPOLOGY_REGION], labels[TOPOLOGY_ZONE][-1]
            labels[TOPOLOGY_ZONE] = f"{region}-{TOPOLOGY_ZONES[(TOPOLOGY_ZONES.index(zone) + 1) % len(TOPOLOGY_ZONES)]}"
        self.cluster_labels[name] = labels
        return TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", self.clusterevent(name, labels, random.Random())

    def tainted(self, name: str, at: datetime) -> Item:
        taint = {"key": "benchmark", "value": "", "effect": "NoSelect"}
        return TopicRole.TAINTS, name, event("cluster.taints.updated", {"cluster": name, "taints": [taint]}, at)
