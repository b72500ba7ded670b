"""A single-engine driver for ClusterPlacementEngine tests: applies placements and inventory changes, decides, and
keeps what was published."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.cluster import ClusterPlacementEngine, PlacementState
from engine.cluster.pipeline.groups import Page
from engine.cluster.tracking.state import DECISION_PART, Published
from engine.core import Emit, EngineContext, EngineSettings
from engine.inventory import Inventory, InventoryChange
from tests.engine.cluster.cluster_builders import NOW, World, a_cluster
from topics.codec import decode_event, encode_event
from topics.inventory import AddOnPlacementScore
from topics.names import TopicRole
from topics.placement import Placement, PlacementDecided


def key_of(placement: Placement) -> str:
    return f"Placement/{placement.metadata.namespace}/{placement.metadata.name}"


@dataclass
class Driver:
    """A minimal runtime: feeds events, decides, tracks, and records what was published."""

    world: World
    settings: EngineSettings = field(default_factory=EngineSettings)
    now: datetime = NOW
    engine: ClusterPlacementEngine = field(default_factory=ClusterPlacementEngine)
    states: dict[str, PlacementState] = field(default_factory=dict)
    published: list[tuple[str, Emit]] = field(default_factory=list)
    inventory: Inventory = field(init=False)

    def __post_init__(self) -> None:
        self.inventory = self.world.inventory(self.now)

    def ctx(self) -> EngineContext:
        return EngineContext(now=self.now, inventory=self.inventory, settings=self.settings)

    def _commit(self, key: str, state: PlacementState | None, emits: tuple[Emit, ...]) -> None:
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state
        self.engine.track(key, state)
        self.published += [(key, e) for e in emits]

    def hold(self, placement: Placement, clusters: Sequence[str]) -> None:
        """Start from `clusters` as the placement's current decision (D10), published without conditions, so the
        next decision is published whatever it decides (K2)."""
        page = Page(f"{placement.metadata.name}-decision-1", "", 0, tuple(sorted(clusters)))
        published = Published((page,), len(clusters), (), None, placement.metadata.generation, self.now)
        self._commit(key_of(placement), PlacementState(placement, published), ())

    def decided_elsewhere(self, counts: Mapping[str, int]) -> None:
        """Balance's input: cluster c is decided by `counts[c]` placements of another instance (F2)."""
        for i in range(max(counts.values(), default=0)):
            clusters = sorted(name for name, count in counts.items() if count > i)
            raw = {"published": {"pages": [[f"other{i}-decision-1", "", 0, clusters]]}}
            self.engine.observe_peer(f"Placement/elsewhere/other{i}", DECISION_PART, raw)

    def apply(self, placement: Placement) -> list[Emit]:
        key = key_of(placement)
        raw = encode_event(kind_name="placement.applied", data=placement, subject=key, event_id="e", time=self.now)
        step = self.engine.on_event(key, self.states.get(key), decode_event(raw, TopicRole.SUBMISSIONS), self.ctx())
        assert step.redecide and step.state is not None and not step.emits
        self._commit(key, step.state, ())
        return self.decide(key)

    def decide(self, key: str) -> list[Emit]:
        before = len(self.published)
        step = self.engine.decide(key, self.states[key], self.ctx())
        self._commit(key, step.state, step.emits)
        return [e for _, e in self.published[before:]]

    def timer(self, key: str) -> list[Emit]:
        before = len(self.published)
        step = self.engine.on_timer(key, self.states[key], self.ctx())
        self._commit(key, step.state, step.emits)
        return [e for _, e in self.published[before:]]

    def change(self, changes: list[InventoryChange]) -> list[str]:
        affected = list(self.engine.affected_by(changes, self.ctx()))
        for key in affected:
            self.decide(key)
        return affected


def data(emit: Emit) -> PlacementDecided:
    assert emit.kind == "placement.decided" and isinstance(emit.data, PlacementDecided)
    return emit.data


def clusters(event: PlacementDecided) -> list[str]:
    return [d["clusterName"] for page in event.placement_decisions for d in page["status"]["decisions"]]


THREE = (a_cluster("c1"), a_cluster("c2"), a_cluster("c3"))
SIZED = (
    a_cluster("c1").with_labels(tier="canary").with_resources({"cpu": "4"}),
    a_cluster("c2").with_resources({"cpu": "16"}),
    a_cluster("c3").with_labels(tier="canary").with_resources({"cpu": "8"}),
    a_cluster("c4").with_resources({"cpu": "32"}),
)


def _resource_weight(name: str) -> dict[str, Any]:
    return {"scoreCoordinate": {"type": "BuiltIn", "builtIn": name}, "weight": 1}


_CPU = _resource_weight("ResourceAllocatableCPU")
_CANARY_GROUP = {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"tier": "canary"}}}}


def score_of(cluster: str, resource: str, value: int, valid_until: str | None = None) -> AddOnPlacementScore:
    status: dict[str, Any] = {"scores": [{"name": "s", "value": value}]}
    if valid_until:
        status["validUntil"] = valid_until
    return AddOnPlacementScore.model_validate({"metadata": {"name": resource, "namespace": cluster}, "status": status})


SET_LABEL = "cluster.open-cluster-management.io/clusterset"
