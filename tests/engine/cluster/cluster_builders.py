"""Fluent builders for cluster-placement tests: clusters, a world (inventory) and placements."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from engine.cluster.fleet.views import CLUSTERSET_LABEL, InventoryView
from engine.cluster.pipeline.compiled import compile_placement
from engine.cluster.pipeline.evaluate import Evaluation, evaluate
from engine.cluster.pipeline.framework import EvalContext, MappingCounts
from engine.cluster.pipeline.plugins.predicate import PredicateFilter
from engine.cluster.pipeline.status import Code
from engine.core import CEL_PLACEMENT_BUDGET
from engine.inventory import Inventory
from topics.interning import Interning
from topics.inventory import (
    AddOnPlacementScore,
    ClusterTaintsUpdated,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Taint,
)
from topics.placement import Placement

NOW = datetime(2022, 1, 1, tzinfo=UTC)


def ts(text: str) -> datetime:
    """An RFC 3339 instant."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class ClusterBuilder:
    """`a_cluster("c1").in_set("set1").with_labels(env="prod").with_taint("k", effect="NoSelect")`."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, Any], ...] = ()
    allocatable: dict[str, str] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    terminating: bool = False

    def with_labels(self, labels: Mapping[str, str] | None = None, **more: str) -> ClusterBuilder:
        return replace(self, labels={**self.labels, **(labels or {}), **more})

    def in_set(self, name: str) -> ClusterBuilder:
        return self.with_labels({CLUSTERSET_LABEL: name})

    def with_claims(self, claims: Mapping[str, str] | None = None, **more: str) -> ClusterBuilder:
        return replace(self, claims={**self.claims, **(claims or {}), **more})

    def with_taint(
        self,
        key: str,
        value: str = "",
        effect: str = "NoSelect",
        time_added: str | None = None,
        first_seen: str | None = None,
    ) -> ClusterBuilder:
        taint: dict[str, Any] = {"key": key, "value": value, "effect": effect}
        if time_added:
            taint["timeAdded"] = time_added
        if first_seen:
            taint["firstSeen"] = first_seen
        return replace(self, taints=(*self.taints, taint))

    def with_resources(
        self, allocatable: Mapping[str, str], capacity: Mapping[str, str] | None = None
    ) -> ClusterBuilder:
        return replace(self, allocatable=dict(allocatable), capacity=dict(capacity or allocatable))

    def being_deleted(self) -> ClusterBuilder:
        return replace(self, terminating=True)

    def build(self, with_taints: bool = False) -> ManagedCluster:
        metadata: dict[str, Any] = {"name": self.name, "labels": self.labels}
        if self.terminating:
            metadata["deletionTimestamp"] = "2021-12-31T00:00:00Z"
        status: dict[str, Any] = {
            "allocatable": self.allocatable,
            "capacity": self.capacity,
            "clusterClaims": [{"name": k, "value": v} for k, v in self.claims.items()],
        }
        spec: dict[str, Any] = {}
        if with_taints:
            spec["taints"] = [{k: v for k, v in t.items() if k != "firstSeen"} for t in self.taints]
        return ManagedCluster.model_validate({"metadata": metadata, "spec": spec, "status": status})


def a_cluster(name: str) -> ClusterBuilder:
    """Start a cluster."""
    return ClusterBuilder(name)


@dataclass
class World:
    """Everything in the inventory; `inventory(now)` replays it (taints dated by their first-seen time)."""

    clusters: list[ClusterBuilder] = field(default_factory=list)
    sets: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    bindings: dict[str, list[str]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)

    def with_clusters(self, *clusters: ClusterBuilder) -> World:
        self.clusters.extend(clusters)
        return self

    def with_set(self, name: str, selector: dict[str, Any] | None = None) -> World:
        self.sets[name] = selector
        return self

    def with_binding(self, namespace: str, *sets: str) -> World:
        self.bindings.setdefault(namespace, []).extend(sets)
        return self

    def with_score(
        self, cluster: str, resource: str, values: Mapping[str, int], valid_until: str | None = None
    ) -> World:
        entry: dict[str, Any] = {"cluster": cluster, "resource": resource, "values": dict(values)}
        if valid_until:
            entry["validUntil"] = valid_until
        self.scores.append(entry)
        return self

    def inventory(self, now: datetime = NOW) -> Inventory:
        inventory = Inventory()
        self.fill(inventory, now)
        return inventory

    def fill(self, inventory: Inventory, now: datetime = NOW) -> None:
        early = datetime(2000, 1, 1, tzinfo=UTC)
        for builder in self.clusters:
            inventory.apply(builder.build(), early)
            # Taints without timeAdded are dated by the first event carrying them (spec D9).
            instants = sorted({ts(t["firstSeen"]) if t.get("firstSeen") else now for t in builder.taints})
            for instant in instants:
                present = [
                    Taint.model_validate({k: v for k, v in t.items() if k != "firstSeen"})
                    for t in builder.taints
                    if t.get("timeAdded") or (ts(t["firstSeen"]) if t.get("firstSeen") else now) <= instant
                ]
                inventory.apply(ClusterTaintsUpdated(cluster=builder.name, taints=present), instant)
        for name, selector in self.sets.items():
            spec = {"clusterSelector": selector} if selector is not None else {}
            inventory.apply(ManagedClusterSet.model_validate({"metadata": {"name": name}, "spec": spec}), early)
        for namespace, names in self.bindings.items():
            for name in names:
                binding = {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterSet": name}}
                inventory.apply(ManagedClusterSetBinding.model_validate(binding), early)
        for score in self.scores:
            status: dict[str, Any] = {"scores": [{"name": k, "value": v} for k, v in score["values"].items()]}
            if score.get("validUntil"):
                status["validUntil"] = score["validUntil"]
            obj = {"metadata": {"name": score["resource"], "namespace": score["cluster"]}, "status": status}
            inventory.apply(AddOnPlacementScore.model_validate(obj), early)


def a_world() -> World:
    """Start an empty world."""
    return World()


def one_set_world(*clusters: ClusterBuilder, namespace: str = "ns1", set_name: str = "set1") -> World:
    """The common shape: every cluster in one exclusive set bound into one namespace."""
    world = a_world().with_set(set_name).with_binding(namespace, set_name)
    return world.with_clusters(*(c.in_set(set_name) for c in clusters))


INTERNING = Interning()
"""The pools the builders validate Placements with, as a runtime's decoder does."""


def a_placement(
    spec: Mapping[str, Any] | None = None,
    *,
    name: str = "placement1",
    namespace: str = "ns1",
    annotations: Mapping[str, str] | None = None,
    generation: int = 1,
) -> Placement:
    """A Placement from upstream-style JSON spec, its parts shared with equal ones built before (`INTERNING`)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "generation": generation}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return Placement.model_validate({"metadata": metadata, "spec": dict(spec or {})}, context=INTERNING)


def run(
    world: World | Inventory,
    placement: Placement,
    *,
    now: datetime = NOW,
    current: Sequence[str] = (),
    balance: Mapping[str, int] | None = None,
) -> Evaluation:
    """Evaluate one placement purely, as the conformance harness does.

    It is evaluated twice: with explain data (every prioritizer's raw scores and every passing cluster's total,
    returned) and as the service evaluates without explain, where some prioritizers add into the totals directly
    and a spread placement's unselected clusters are not scored. Both must agree on what a decision carries: the
    selected clusters and their totals (K3), which are the explained totals of those clusters.
    """
    results = [
        evaluated(world, placement, now=now, current=current, balance=balance, explain=explain)
        for explain in (True, False)
    ]
    explained, plain = results
    assert plain.scores == explained.scores
    assert list(plain.scores) == list(explained.scores)
    assert explained.scores == {name: explained.passing_scores[name] for name in sorted(explained.selected)}
    assert (plain.selected, plain.pages, plain.status, plain.due) == (
        explained.selected,
        explained.pages,
        explained.status,
        explained.due,
    )
    return explained


def evaluated(
    world: World | Inventory,
    placement: Placement,
    *,
    now: datetime = NOW,
    current: Sequence[str] = (),
    balance: Mapping[str, int] | None = None,
    explain: bool = False,
) -> Evaluation:
    """One evaluation of one placement, with or without explain data."""
    inventory = world if isinstance(world, Inventory) else world.inventory(now)
    return evaluate(
        EvalContext(
            placement=placement,
            view=InventoryView(inventory),
            now=now,
            current=frozenset(current),
            others=MappingCounts(dict(balance or {})),
            compiled=compile_placement(placement),
            explain=explain,
        )
    )


def decided(evaluation: Evaluation) -> list[str]:
    """All pages' clusters concatenated in page order."""
    return [name for page in evaluation.pages for name in page.clusters]


def condition(evaluation: Evaluation, kind: str) -> tuple[str, str, str]:
    """(status, reason, message) of one condition."""
    for cond in evaluation.conditions:
        if cond.type == kind:
            return cond.status, cond.reason, cond.message
    raise AssertionError(f"no {kind} condition")


def predicate_filtered(
    view: InventoryView,
    placement: Placement,
    sets: tuple[str, ...] = ("set1",),
    *,
    cel_budget: int = CEL_PLACEMENT_BUDGET,
) -> tuple[list[str], Code, str]:
    """The Predicate filter's passed clusters and status for a placement whose candidates are the sets' clusters."""
    ctx = EvalContext(
        placement=placement,
        view=view,
        now=NOW,
        current=frozenset(),
        others=MappingCounts(),
        compiled=compile_placement(placement),
        cel_budget=cel_budget,
    )
    result = PredicateFilter().filter(ctx, view.available_ids(sets))
    return view.fleet().names_of(result.passed), result.status.code, result.status.message
