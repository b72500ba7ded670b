"""A seeded, mixed input stream whose final decisions do not depend on wall-clock time or on the order in
which the inventory and subject topics are interleaved.

It mixes YuniKorn submissions and completions (against a generated queue configuration) with OCM Placements
and inventory changes: ManagedClusters, sets, bindings and taints. What would make a result depend on time or
on processing order is left out on purpose: no `tolerationSeconds`, no AddOn scores (they expire), no
`NoSelectIfNew` taints and no Balance or Steady prioritizers (every policy is `Exact`), and every namespace keeps
one binding to a set that never changes: a binding or set change re-decides only the placements that name that
set (or name none), so a namespace losing or regaining its last valid binding would leave the condition of its
other placements (`NoManagedClusterSetBindings` or `NoIntersection`) depending on arrival order. The last
decision of a placement is then a function of the last inventory and the last spec only. Applications of one
YuniKorn partition share one record key, so their order, and with it every answer, is the same in Kafka and in
replay.

Sentinels make the end of the stream observable through committed decisions: a barrier placement per task
partition selects one cluster only once the last cluster-status record and the last taints record were
applied (both topics have one partition, read in order).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from streams.kafka.tasks import partition_of
from topics.names import TopicRole

__all__ = ["BARRIER_CLUSTER", "Item", "Workload", "task_names"]

CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
BARRIER_CLUSTER = "zz-barrier"
BARRIER_NAMESPACE = "barrier"
SETS = ("prod", "dev", "gpu")
"""Sets that come and go; `base` stays, bound to every namespace."""
BASE = "base"
BINDINGS = (("apps", "prod"), ("apps", "gpu"), ("batch", "dev"), ("batch", "prod"), ("ml", "gpu"), ("ml", "dev"))
NAMESPACES = ("apps", "batch", "ml")
REGIONS = ("us-east", "us-west", "eu-west", "ap-south")
USERS = ("alice", "bob", "carol", "dave", "erin", "mallory", "blocked-1")
GROUPS = ((), ("dev",), ("ops",), ("dev", "ops"))
QUEUES = ("", "", "root.analytics", "analytics", "root.default", "root.missing", "root.users", "root.shared")
TAGS = ("", "", "payments", "search", "ml")
TAINTS = (
    {"key": "maintenance", "effect": "NoSelect"},
    {"key": "degraded", "value": "disk", "effect": "PreferNoSelect"},
    {"key": "gpu-busy", "value": "yes", "effect": "NoSelect"},
)


@dataclass(frozen=True, slots=True)
class Item:
    """One record to produce: topic role, key and value (a CloudEvent as a dict, or None for a tombstone)."""

    role: TopicRole
    key: str
    value: dict[str, Any] | None


def task_names(prefix: str, partitions: int, subject: str) -> list[str]:
    """One name per task partition: `<prefix><n>` chosen so that `subject.format(name)` lands on that task."""
    found: dict[int, str] = {}
    number = 0
    while len(found) < partitions:
        name = f"{prefix}{number}"
        found.setdefault(partition_of(subject.format(name), partitions), name)
        number += 1
    return [found[task] for task in range(partitions)]


_PARTITION = """\
  - name: {name}
    placementrules:
      - name: provided
        create: false
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.namespaces
      - name: user
        create: true
        filter:
          type: deny
          users: ["^blocked-.*"]
        parent:
          name: fixed
          value: root.users
      - name: fixed
        value: root.shared
    queues:
      - name: root
        submitacl: " ops"
        queues:
          - name: default
            submitacl: "alice,bob"
          - name: analytics
            submitacl: "alice,carol dev"
          - name: namespaces
            parent: true
            submitacl: "*"
          - name: users
            parent: true
            submitacl: "alice,bob,carol,dave,erin"
          - name: shared
            submitacl: "dave"
"""
"""One YuniKorn partition of the queue configuration (see `Workload.queue_config`)."""


@dataclass
class Workload:
    """Generates the stream; `queue_config()` is the YAML both the processors and the replay read."""

    seed: int
    partitions: int
    clusters: int = 12
    placements: int = 24
    _rng: random.Random = field(init=False)
    _serial: int = field(default=0, init=False)
    _active: dict[str, list[str]] = field(default_factory=dict, init=False)
    _live_placements: dict[str, int] = field(default_factory=dict, init=False)
    _live_clusters: set[str] = field(default_factory=set, init=False)
    _probes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self.yunikorn = task_names("team", self.partitions, "Application/{}")
        """YuniKorn partitions, one per task partition, so that applications (and probes) reach every task."""
        self.barriers = task_names("b", self.partitions, f"Placement/{BARRIER_NAMESPACE}/{{}}")
        self._active = {p: [] for p in self.yunikorn}

    # --- the queue configuration ------------------------------------------------------------------
    def queue_config(self) -> str:
        """Provided, tag (created under root.namespaces), user (created, filtered) and a fixed fallback that
        only some users may submit to, so accepted, created and rejected answers all occur."""
        return "partitions:\n" + "".join(_PARTITION.format(name=name) for name in self.yunikorn)

    # --- events -----------------------------------------------------------------------------------
    def _event(self, kind: str, data: Any) -> dict[str, Any]:
        self._serial += 1
        return {
            "specversion": "1.0",
            "id": f"w{self.seed}-{self._serial}",
            "source": "/tests/faults",
            "type": f"{kind}.v1",
            "datacontenttype": "application/json",
            "data": data,
        }

    def _status(self, kind: str, key: str, data: Any) -> Item:
        return Item(TopicRole.CLUSTER_STATUS, key, self._event(f"{kind}.applied", data))

    def setup(self) -> list[Item]:
        """Sets, bindings, every cluster, the barrier cluster (tainted, not yet labelled) and the barrier
        placements, before the stream starts."""
        items = [self._cluster_set(name) for name in (*SETS, BASE)]
        items += [self._binding(ns, cluster_set, bound=True) for ns, cluster_set in BINDINGS]
        items += [self._binding(ns, BASE, bound=True) for ns in NAMESPACES]
        items.append(self._cluster_set(BARRIER_NAMESPACE))
        items.append(self._binding(BARRIER_NAMESPACE, BARRIER_NAMESPACE, bound=True))
        items += [self._cluster(f"c{n:03d}") for n in range(self.clusters)]
        items.append(self._barrier_cluster(done=False))
        items.append(self._taints(BARRIER_CLUSTER, [{"key": "barrier", "effect": "NoSelect"}]))
        items += [self._barrier_placement(name) for name in self.barriers]
        items += [self._placement(f"p{n:03d}") for n in range(self.placements)]
        return items

    def finale(self) -> list[Item]:
        """The last taints record and the last cluster-status record: the barrier cluster becomes selectable."""
        return [self._taints(BARRIER_CLUSTER, []), self._barrier_cluster(done=True)]

    def stream(self, count: int) -> list[Item]:
        """`count` mixed changes."""
        kinds = (
            (self._submit, 34),
            (self._complete, 10),
            (self._placement_change, 18),
            (self._cluster_change, 18),
            (self._taint_change, 12),
            (self._binding_change, 3),
            (self._set_change, 2),
            (self._malformed, 3),
        )
        makers, weights = zip(*kinds, strict=True)
        return [self._rng.choices(makers, weights)[0]() for _ in range(count)]

    def probes(self) -> list[Item]:
        """One application per task partition: its decision shows that task is processing again."""
        self._probes += 1
        return [
            Item(
                TopicRole.SUBMISSIONS,
                f"Application/{partition}",
                self._event(
                    "application.submitted",
                    {"applicationId": f"probe-{self._probes}-{partition}", "partition": partition, "user": "alice"},
                ),
            )
            for partition in self.yunikorn
        ]

    # --- queue engine -----------------------------------------------------------------------------
    def _submit(self) -> Item:
        rng = self._rng
        partition = rng.choice(self.yunikorn)
        app = f"app-{self._serial + 1}"
        tags = {"namespace": tag} if (tag := rng.choice(TAGS)) else {}
        data = {
            "applicationId": app,
            "partition": partition,
            "user": rng.choice(USERS),
            "groups": list(rng.choice(GROUPS)),
            "queue": rng.choice(QUEUES),
            "tags": tags,
        }
        self._active[partition].append(app)
        return Item(TopicRole.SUBMISSIONS, f"Application/{partition}", self._event("application.submitted", data))

    def _complete(self) -> Item:
        partition = self._rng.choice(self.yunikorn)
        active = self._active[partition]
        if not active:
            return self._submit()
        app = active.pop(self._rng.randrange(len(active)))
        data = {"applicationId": app, "partition": partition}
        return Item(TopicRole.SUBMISSIONS, f"Application/{partition}", self._event("application.completed", data))

    def _malformed(self) -> Item:
        """A schema violation (empty application id): dead-lettered exactly once, in the task's transaction."""
        partition = self._rng.choice(self.yunikorn)
        data = {"applicationId": "", "partition": partition, "user": f"bad-{self._serial + 1}"}
        return Item(TopicRole.SUBMISSIONS, f"Application/{partition}", self._event("application.submitted", data))

    # --- cluster engine ---------------------------------------------------------------------------
    def _cluster_set(self, name: str) -> Item:
        if name == "gpu":
            selector: dict[str, Any] = {
                "selectorType": "LabelSelector",
                "labelSelector": {"matchLabels": {"gpu": "on"}},
            }
        else:
            selector = {"selectorType": "ExclusiveClusterSetLabel"}
        data = {"metadata": {"name": name}, "spec": {"clusterSelector": selector}}
        return self._status("managedclusterset", f"ManagedClusterSet/{name}", data)

    def _binding(self, namespace: str, cluster_set: str, *, bound: bool) -> Item:
        key = f"ManagedClusterSetBinding/{namespace}/{cluster_set}"
        if not bound:
            return Item(TopicRole.CLUSTER_STATUS, key, None)
        data = {"metadata": {"name": cluster_set, "namespace": namespace}, "spec": {"clusterSet": cluster_set}}
        return self._status("managedclustersetbinding", key, data)

    def _cluster(self, name: str) -> Item:
        rng = self._rng
        labels = {"region": rng.choice(REGIONS), "env": rng.choice(("prod", "staging", "test"))}
        if (cluster_set := rng.choice(("prod", "dev", BASE, None))) is not None:
            labels[CLUSTERSET_LABEL] = cluster_set
        if rng.random() < 0.3:
            labels["gpu"] = "on"
        if rng.random() < 0.5:
            labels["tier"] = rng.choice(("gold", "silver"))
        spec_taints = [dict(rng.choice(TAINTS))] if rng.random() < 0.15 else []
        cpu, memory = rng.choice((2, 4, 8, 16, 32, 64)), rng.choice((8, 16, 32, 64, 128))
        data = {
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": spec_taints},
            "status": {
                "allocatable": {"cpu": str(cpu), "memory": f"{memory}Gi"},
                "capacity": {"cpu": str(cpu * 2), "memory": f"{memory * 2}Gi"},
                "clusterClaims": [{"name": "platform", "value": rng.choice(("AWS", "GCP", "Azure"))}],
            },
        }
        self._live_clusters.add(name)
        return self._status("managedcluster", f"ManagedCluster/{name}", data)

    def _barrier_cluster(self, *, done: bool) -> Item:
        labels = {CLUSTERSET_LABEL: BARRIER_NAMESPACE, "barrier": "done" if done else "pending"}
        data = {"metadata": {"name": BARRIER_CLUSTER, "labels": labels}}
        return self._status("managedcluster", f"ManagedCluster/{BARRIER_CLUSTER}", data)

    def _taints(self, cluster: str, taints: list[dict[str, Any]]) -> Item:
        return Item(
            TopicRole.TAINTS, cluster, self._event("cluster.taints.updated", {"cluster": cluster, "taints": taints})
        )

    def _cluster_change(self) -> Item:
        name = f"c{self._rng.randrange(self.clusters):03d}"
        if name in self._live_clusters and self._rng.random() < 0.15:
            self._live_clusters.discard(name)
            return Item(TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", None)
        return self._cluster(name)

    def _taint_change(self) -> Item:
        rng = self._rng
        name = f"c{rng.randrange(self.clusters):03d}"
        if rng.random() < 0.2:
            return Item(TopicRole.TAINTS, name, None)
        return self._taints(name, [dict(t) for t in rng.sample(TAINTS, rng.randrange(len(TAINTS) + 1))])

    def _binding_change(self) -> Item:
        namespace, cluster_set = self._rng.choice(BINDINGS)
        return self._binding(namespace, cluster_set, bound=self._rng.random() < 0.6)

    def _set_change(self) -> Item:
        name = self._rng.choice(SETS)
        if self._rng.random() < 0.3:
            return Item(TopicRole.CLUSTER_STATUS, f"ManagedClusterSet/{name}", None)
        return self._cluster_set(name)

    def _barrier_placement(self, name: str) -> Item:
        spec = {
            "clusterSets": [BARRIER_NAMESPACE],
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"barrier": "done"}}}}],
            "prioritizerPolicy": {"mode": "Exact"},
        }
        return self._applied(BARRIER_NAMESPACE, name, spec, 1)

    def _applied(self, namespace: str, name: str, spec: dict[str, Any], generation: int) -> Item:
        data = {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": namespace, "generation": generation},
            "spec": spec,
        }
        return Item(TopicRole.SUBMISSIONS, f"Placement/{namespace}/{name}", self._event("placement.applied", data))

    def _placement(self, name: str) -> Item:
        rng = self._rng
        namespace = NAMESPACES[int(name[1:]) % len(NAMESPACES)]
        generation = self._live_placements.get(name, 0) + 1
        self._live_placements[name] = generation
        spec: dict[str, Any] = {"prioritizerPolicy": {"mode": "Exact", "configurations": _prioritizers(self._rng)}}
        if rng.random() < 0.5:
            spec["clusterSets"] = rng.sample((*SETS, BASE), rng.randrange(1, len(SETS) + 2))
        if rng.random() < 0.7:
            spec["numberOfClusters"] = rng.randrange(1, 5)
        predicates = _predicates(rng)
        if predicates:
            spec["predicates"] = predicates
        tolerations = ({"key": "maintenance", "operator": "Exists"}, {"key": "gpu-busy", "value": "yes"})
        spec["tolerations"] = [dict(t) for t in rng.sample(tolerations, rng.randrange(len(tolerations) + 1))]
        if rng.random() < 0.2:
            spec["decisionStrategy"] = {"groupStrategy": {"clustersPerDecisionGroup": rng.choice(("50%", 1, 2))}}
        return self._applied(namespace, name, spec, generation)

    def _placement_change(self) -> Item:
        name = f"p{self._rng.randrange(self.placements):03d}"
        if name in self._live_placements and self._rng.random() < 0.2:
            del self._live_placements[name]
            namespace = NAMESPACES[int(name[1:]) % len(NAMESPACES)]
            data = {"metadata": {"name": name, "namespace": namespace}}
            key = f"Placement/{namespace}/{name}"
            return Item(TopicRole.SUBMISSIONS, key, self._event("placement.deleted", data))
        return self._placement(name)


def _prioritizers(rng: random.Random) -> list[dict[str, Any]]:
    """None, one or both resource prioritizers, with weights 1 to 3."""
    chosen = rng.sample(("ResourceAllocatableCPU", "ResourceAllocatableMemory"), rng.randrange(3))
    return [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}, "weight": rng.randrange(1, 4)} for name in chosen]


def _predicates(rng: random.Random) -> list[dict[str, Any]]:
    """A region label selector, a platform claim selector and a CEL expression, each with its own chance."""
    predicates: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        regions = rng.sample(REGIONS, rng.randrange(1, len(REGIONS)))
        expressions = [{"key": "region", "operator": rng.choice(("In", "NotIn")), "values": regions}]
        predicates.append({"requiredClusterSelector": {"labelSelector": {"matchExpressions": expressions}}})
    if rng.random() < 0.25:
        claims = [{"key": "platform", "operator": "In", "values": rng.sample(("AWS", "GCP", "Azure"), 2)}]
        predicates.append({"requiredClusterSelector": {"claimSelector": {"matchExpressions": claims}}})
    if rng.random() < 0.1:
        cel = ['managedCluster.metadata.labels["env"] != "test"']
        predicates.append({"requiredClusterSelector": {"celSelector": {"celExpressions": cel}}})
    return predicates
